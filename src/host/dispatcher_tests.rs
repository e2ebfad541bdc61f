//! Dispatcher tests over in-memory connections: every extension is a
//! thread of this process speaking the protocol over pipes (see
//! [`super::in_memory`]), so load order, generations, deadlines,
//! disconnects, ordering and backpressure are checked without spawning a
//! process. Deadlines are shortened through [`Deadlines`]; nothing sleeps
//! to wait for something a channel can announce.

use super::in_memory::{Peer, PeerFn};
use super::*;
use crate::events::{Collect, Event};
use serde_json::json;
use std::time::Duration;

/// A sandbox with one extension directory per name (load order = order
/// given) and a host configuration pointing at it.
struct Sandbox {
    _tmp: tempfile::TempDir,
    config: HostConfig,
    opts: discovery::Options,
}

fn sandbox(names: &[&str], deadlines: Deadlines) -> Sandbox {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("home");
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let mut ext_paths = Vec::new();
    for name in names {
        let dir = tmp.path().join("exts").join(name);
        std::fs::create_dir_all(&dir).expect("ext dir");
        let manifest = json!({"name": name, "version": "1.0.0", "exec": "./run"});
        std::fs::write(dir.join("extension.json"), manifest.to_string()).expect("manifest");
        // Never run: the in-memory peer stands in for the process.
        std::fs::write(dir.join("run"), "#!/bin/sh\nexit 99\n").expect("run");
        ext_paths.push(dir);
    }
    let config = HostConfig {
        zut_home: home.clone(),
        cwd: cwd.clone(),
        provider: "script".into(),
        model: "test".into(),
        deadlines,
        interactive: false,
        search_path: None,
        skills: false,
        session: None,
    };
    let opts = discovery::Options {
        cwd,
        zut_home: home,
        ext_paths,
        no_extensions: true,
    };
    Sandbox {
        _tmp: tmp,
        config,
        opts,
    }
}

/// Deadlines long enough never to expire in a passing test.
fn roomy() -> Deadlines {
    Deadlines {
        hello: Duration::from_secs(20),
        ready: Duration::from_secs(20),
        idle_ready: Duration::from_secs(20),
        command: Duration::from_secs(20),
        tool: Duration::from_secs(60),
        intercept: Duration::from_secs(20),
        shutdown_grace: Duration::from_secs(5),
        kill_grace: Duration::from_secs(1),
        write: Duration::from_secs(5),
        torn_frame: Duration::from_millis(250),
        exit_drain: Duration::from_millis(200),
    }
}

fn start(
    sb: &Sandbox,
    peers: impl Fn(Peer) + Send + Sync + 'static,
) -> (HostHandle, LoadReport, Arc<Collect>) {
    let sink = Arc::new(Collect::default());
    let peers: PeerFn = Arc::new(peers);
    let (host, report) =
        HostHandle::start_with_peers(sb.config.clone(), sb.opts.clone(), sink.clone(), peers);
    (host, report, sink)
}

fn events(sink: &Collect) -> Vec<Event> {
    sink.0.lock().expect("events").clone()
}

fn text_of(reply: &ToolReply) -> String {
    reply
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

fn call(host: &HostHandle, tool: &str, args: Value) -> ToolReply {
    host.call_tool(tool, &args, &CancelToken::never())
        .unwrap_or_else(|| panic!("no tool {tool}"))
}

/// The usual extension: hello, one tool, ready, then answers calls with
/// its own name until shutdown.
fn plain(mut p: Peer) {
    p.hello();
    p.register_tool("t");
    p.ready();
    let name = p.name.clone();
    p.serve(&name);
}

#[test]
fn registrations_commit_in_load_order_whatever_the_handshake_order() {
    let sb = sandbox(&["alpha", "beta"], roomy());
    let (beta_done_tx, beta_done_rx) = crossbeam_channel::bounded::<()>(1);
    let (host, report, sink) = start(&sb, move |mut p| match p.name.as_str() {
        "alpha" => {
            // alpha speaks only once beta's hello has been acknowledged
            // and its whole handshake sent.
            let _ = beta_done_rx.recv();
            p.hello();
            p.register_tool("shared");
            p.register_tool("alpha_only");
            p.ready();
            p.serve("alpha");
        }
        _ => {
            p.hello();
            p.register_tool("shared");
            p.ready();
            let _ = beta_done_tx.send(());
            p.serve("beta");
        }
    });
    assert_eq!(report.loaded.len(), 2);
    assert_eq!(
        host.tool("shared").map(|t| t.extension),
        Some("alpha".into())
    );
    assert_eq!(text_of(&call(&host, "shared", json!({}))), "alpha");
    assert_eq!(text_of(&call(&host, "alpha_only", json!({}))), "alpha");
    let loaded: Vec<String> = events(&sink)
        .into_iter()
        .filter_map(|e| match e {
            Event::ExtLoaded {
                extension, tools, ..
            } => Some(format!("{extension}:{}", tools.join(","))),
            _ => None,
        })
        .collect();
    assert_eq!(loaded, ["alpha:shared,alpha_only", "beta:"]);
    let exts = host.all_extensions();
    assert!(exts[0].conflicts.is_empty());
    assert_eq!(exts[1].conflicts.len(), 1, "{:?}", exts[1]);
    assert!(
        exts[1].conflicts[0].contains("shared"),
        "{:?}",
        exts[1].conflicts
    );
    host.shutdown();
    assert_eq!(host.live_threads(), 0);
}

#[test]
fn a_silent_extension_is_disconnected_at_the_hello_deadline() {
    let sb = sandbox(
        &["mute", "fine"],
        Deadlines {
            hello: Duration::from_millis(150),
            ..roomy()
        },
    );
    let (host, report, sink) = start(&sb, |mut p| {
        if p.name == "mute" {
            // Says nothing; returns once the host closes its stdin.
            while p.recv().is_some() {}
        } else {
            plain(p)
        }
    });
    let Outcome::Failed(msg) = &report.loaded[0].outcome else {
        panic!("mute loaded: {:?}", report.loaded[0].outcome)
    };
    assert!(msg.contains("sent no hello within 150 ms"), "{msg}");
    assert!(
        matches!(&report.loaded[1].outcome, Outcome::Started(r) if r.phase == Phase::Ready { auto: false })
    );
    assert!(events(&sink).iter().any(
        |e| matches!(e, Event::ExtError { extension, message } if extension == "mute" && message.contains("no hello"))
    ));
    assert_eq!(text_of(&call(&host, "t", json!({}))), "fine");
    host.shutdown();
    assert_eq!(host.live_threads(), 0);
}

#[test]
fn a_load_left_to_the_dispatcher_names_what_it_discovered_before_any_handshake() {
    let sb = sandbox(&["a", "b"], roomy());
    let theme = sb.opts.ext_paths[1].join("theme.json");
    std::fs::write(&theme, r#"{"name":"b-theme","colors":{}}"#).expect("theme");
    let sink = Arc::new(Collect::default());
    // Each peer holds its hello until the test has read the names.
    let (gate_tx, gate_rx) = crossbeam_channel::unbounded::<()>();
    let (handle, loading) = HostHandle::launch_with_peers(
        sb.config.clone(),
        sb.opts.clone(),
        sink.clone(),
        Arc::new(move |p: Peer| {
            let _ = gate_rx.recv_timeout(Duration::from_secs(20));
            plain(p)
        }),
    );
    let names = loading.starting();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    // Events reach the sink through the host's event thread.
    while (names.get().len() < 2 || events(&sink).is_empty())
        && std::time::Instant::now() < deadline
    {
        std::thread::yield_now();
    }
    let got: Vec<(String, &str)> = names
        .get()
        .into_iter()
        .map(|s| (s.name, s.source))
        .collect();
    assert_eq!(got, [("a".into(), "flag"), ("b".into(), "flag")]);
    let evs = events(&sink);
    assert!(
        matches!(evs.first(), Some(Event::Discovered { themes }) if themes.as_slice() == std::slice::from_ref(&theme)),
        "{evs:?}"
    );
    assert!(
        !evs.iter().any(|e| matches!(e, Event::ExtLoaded { .. })),
        "{evs:?}"
    );
    gate_tx.send(()).expect("gate");
    gate_tx.send(()).expect("gate");
    let report = loading.wait(&CancelToken::never());
    assert_eq!(report.loaded.len(), 2);
    assert_eq!(text_of(&call(&handle, "t", json!({}))), "a");
    handle.shutdown();
}

#[test]
fn no_ready_frame_is_auto_ready_with_a_warning() {
    let sb = sandbox(
        &["slow"],
        Deadlines {
            ready: Duration::from_millis(150),
            ..roomy()
        },
    );
    let (host, report, sink) = start(&sb, |mut p| {
        p.hello();
        p.register_tool("t");
        p.serve("served");
    });
    let Outcome::Started(r) = &report.loaded[0].outcome else {
        panic!("{:?}", report.loaded[0].outcome)
    };
    assert_eq!(r.phase, Phase::Ready { auto: true });
    let warning = "sent no ready frame within 150 ms; auto-readied";
    assert!(r.warnings.iter().any(|w| w == warning), "{:?}", r.warnings);
    let evs = events(&sink);
    let loaded = evs
        .iter()
        .position(|e| matches!(e, Event::ExtLoaded { .. }))
        .expect("ext_loaded");
    let warned = evs
        .iter()
        .position(|e| matches!(e, Event::ExtWarning { message, .. } if message == warning))
        .expect("ext_warning");
    assert!(loaded < warned, "{evs:?}");
    assert_eq!(text_of(&call(&host, "t", json!({}))), "served");
    host.shutdown();
}

#[test]
fn a_disconnect_fails_a_pending_call_at_once_with_its_reason_after_the_event() {
    let sb = sandbox(&["crashy"], roomy());
    let (host, _, sink) = start(&sb, |mut p| {
        p.hello();
        p.register_tool("t");
        p.ready();
        p.expect("tool_call");
        // Returning closes both pipes while the call is pending.
    });
    let reply = call(&host, "t", json!({}));
    assert!(reply.is_error);
    let text = text_of(&reply);
    // The tool deadline is 60 s: a reply that waited for it would say so.
    assert!(
        text.contains("closed its stdout") && !text.contains("timeout"),
        "{text}"
    );
    // The error was on the event stream before the caller woke.
    assert!(
        events(&sink).iter().any(|e| matches!(e, Event::ExtError { extension, message } if extension == "crashy" && message.contains("closed its stdout"))),
        "{:?}",
        events(&sink)
    );
    // And the route is gone.
    assert!(host.tool("t").is_none());
    assert!(host
        .gone_tool("t")
        .is_some_and(|g| g.contains("closed its stdout")));
    host.shutdown();
    assert_eq!(host.live_threads(), 0);
}

#[test]
fn reload_while_a_call_is_pending_fails_it_and_the_new_instance_serves() {
    let sb = sandbox(&["svc"], roomy());
    let (got_call_tx, got_call_rx) = crossbeam_channel::bounded::<()>(1);
    let (host, _, sink) = start(&sb, move |mut p| {
        if p.generation > 0 {
            return plain(p);
        }
        p.hello();
        p.register_tool("t");
        p.ready();
        p.expect("tool_call");
        let _ = got_call_tx.send(());
        // Never answers; acknowledges the shutdown.
        p.expect("shutdown");
        p.send(json!({"type": "shutdown_ack"}));
    });
    let caller = {
        let host = host.clone();
        std::thread::spawn(move || call(&host, "t", json!({})))
    };
    got_call_rx.recv().expect("the call reached the extension");
    let report = host.reload();
    assert_eq!(report.generation, 1);
    let failed = caller.join().expect("caller");
    assert!(failed.is_error, "{failed:?}");
    assert!(
        text_of(&failed).contains("stopped at shutdown"),
        "{}",
        text_of(&failed)
    );
    assert_eq!(text_of(&call(&host, "t", json!({}))), "svc");
    assert!(events(&sink).iter().any(|e| matches!(
        e,
        Event::Reload {
            stopped: 1,
            ready: 1,
            ..
        }
    )));
    host.shutdown();
    assert_eq!(host.live_threads(), 0);
}

#[test]
fn frames_of_a_replaced_instance_are_dropped() {
    let sb = sandbox(&["svc"], roomy());
    let (host, _, sink) = start(&sb, |mut p| {
        if p.generation > 0 {
            return plain(p);
        }
        p.hello();
        p.register_tool("t");
        p.ready();
        p.expect("shutdown");
        // Sent on its way out, after the reload replaced it.
        p.send(json!({"type": "notify", "level": "info", "message": "from the old instance"}));
        p.send(json!({"type": "status", "key": "k", "text": "old status"}));
        p.send(json!({"type": "register_tool", "name": "ghost"}));
        p.send(json!({"type": "shutdown_ack"}));
    });
    let before = events(&sink).len();
    host.reload();
    let after = &events(&sink)[before..];
    assert!(
        !after
            .iter()
            .any(|e| matches!(e, Event::ExtNotify { .. } | Event::ExtStatus { .. })),
        "{after:?}"
    );
    assert!(host.tool("ghost").is_none());
    assert_eq!(host.view().generation, 1);
    assert_eq!(text_of(&call(&host, "t", json!({}))), "svc");
    host.shutdown();
}

#[test]
fn a_reply_never_overtakes_the_notify_sent_before_it() {
    let sb = sandbox(&["chatty"], roomy());
    let (host, _, sink) = start(&sb, |mut p| {
        p.hello();
        p.register_tool("t");
        p.ready();
        while let Some(f) = p.recv() {
            match f["type"].as_str() {
                Some("tool_call") => {
                    let k = f["args"]["k"].as_u64().unwrap_or(u64::MAX);
                    p.send(
                        json!({"type": "notify", "level": "info", "message": format!("note {k}")}),
                    );
                    p.reply(&f, &format!("reply {k}"));
                }
                Some("shutdown") => return,
                _ => {}
            }
        }
    });
    for k in 0..500u64 {
        let reply = call(&host, "t", json!({ "k": k }));
        assert_eq!(text_of(&reply), format!("reply {k}"));
        let last_note = events(&sink).into_iter().rev().find_map(|e| match e {
            Event::ExtNotify { message, .. } => Some(message),
            _ => None,
        });
        assert_eq!(last_note, Some(format!("note {k}")), "call {k}");
    }
    host.shutdown();
}

#[test]
fn a_slow_reader_gets_a_600_frame_burst_whole() {
    const BURST: usize = 600;
    let sb = sandbox(
        &["slowpoke"],
        Deadlines {
            write: Duration::from_secs(2),
            ..roomy()
        },
    );
    let (seen_tx, seen_rx) = crossbeam_channel::bounded::<Vec<String>>(1);
    let (host, _, sink) = start(&sb, move |mut p| {
        p.hello();
        p.send(json!({"type": "subscribe", "events": ["turn_end"]}));
        p.ready();
        let mut seen = Vec::new();
        while let Some(f) = p.recv() {
            match f["type"].as_str() {
                Some("event") => {
                    // A reader slower than the burst: the host's queue and
                    // the pipe fill up and the producer must wait for room.
                    if seen.is_empty() {
                        std::thread::sleep(Duration::from_millis(30));
                    }
                    std::thread::sleep(Duration::from_micros(50));
                    let text = f["text"].as_str().unwrap_or_default();
                    seen.push(text.split(':').next().unwrap_or_default().to_string());
                    if seen.len() == BURST {
                        let _ = seen_tx.send(std::mem::take(&mut seen));
                    }
                }
                Some("shutdown") => return,
                _ => {}
            }
        }
    });
    let pad = "x".repeat(2048);
    for i in 0..BURST {
        host.emit_event(&zut_ext::wire::EventPayload {
            text: format!("{i}:{pad}"),
            ..zut_ext::wire::EventPayload::named("turn_end")
        });
    }
    let seen = seen_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the burst arrived");
    let want: Vec<String> = (0..BURST).map(|i| i.to_string()).collect();
    assert_eq!(seen, want);
    assert_eq!(host.extensions().len(), 1, "{:?}", events(&sink));
    assert!(!events(&sink)
        .iter()
        .any(|e| matches!(e, Event::ExtError { .. })));
    host.shutdown();
}

#[test]
fn panel_keys_to_a_full_queue_are_dropped_with_a_warning_and_never_wait() {
    const KEYS: usize = 400;
    // A write deadline far longer than a key may take: waiting for room
    // at all would show.
    let sb = sandbox(
        &["deaf"],
        Deadlines {
            write: Duration::from_secs(10),
            ..roomy()
        },
    );
    let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(1);
    let (host, _, sink) = start(&sb, move |mut p| {
        p.hello();
        p.ready();
        // Reads nothing until told: the pipe and the host's queue fill.
        let _ = go_rx.recv();
        while let Some(f) = p.recv() {
            if f["type"] == "shutdown" {
                return;
            }
        }
    });
    let text = "k".repeat(1024);
    let mut slowest = Duration::ZERO;
    for _ in 0..KEYS {
        let started = std::time::Instant::now();
        host.panel_key("deaf", "p1", "a", Some(text.clone()));
        slowest = slowest.max(started.elapsed());
    }
    assert!(
        slowest < Duration::from_secs(2),
        "a panel key waited {slowest:?} on a full queue"
    );
    let _ = go_tx.send(());
    host.shutdown();
    let events = events(&sink);
    let warnings: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ExtWarning { extension, message } if extension == "deaf" => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert!(
        warnings[0].contains("panel_key frame was dropped"),
        "{}",
        warnings[0]
    );
    assert!(!events.iter().any(|e| matches!(e, Event::ExtError { .. })));
}

#[test]
fn late_registrations_and_withdrawals_apply_at_once_and_are_reported() {
    let sb = sandbox(&["late"], roomy());
    let (host, _, sink) = start(&sb, |mut p| {
        p.hello();
        p.register_tool("t");
        p.ready();
        while let Some(f) = p.recv() {
            match f["type"].as_str() {
                Some("tool_call") => {
                    p.send(json!({"type": "register_tool", "name": "later"}));
                    p.send(json!({"type": "register_command", "name": "cmd"}));
                    p.send(json!({"type": "unregister_tool", "name": "t"}));
                    p.send(json!({"type": "unregister_tool", "name": "nobody"}));
                    p.reply(&f, "done");
                }
                Some("shutdown") => return,
                _ => {}
            }
        }
    });
    assert_eq!(text_of(&call(&host, "t", json!({}))), "done");
    let tools: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(tools, vec!["later".to_string()]);
    let commands: Vec<String> = host.commands().into_iter().map(|c| c.name).collect();
    assert_eq!(commands, vec!["cmd".to_string()]);
    let changes: Vec<(Vec<String>, Vec<String>)> = events(&sink)
        .into_iter()
        .filter_map(|e| match e {
            Event::ExtToolsChanged {
                tools, commands, ..
            } => Some((tools, commands)),
            _ => None,
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        changes,
        vec![
            (s(&["t", "later"]), s(&[])),
            (s(&["t", "later"]), s(&["cmd"])),
            (s(&["later"]), s(&["cmd"])),
        ],
        "one event per change, none for a name it does not own"
    );
    host.shutdown();
}

#[test]
fn a_quiet_extension_is_auto_ready_after_the_idle_silence_not_the_ready_timeout() {
    let sb = sandbox(
        &["quiet"],
        Deadlines {
            idle_ready: Duration::from_millis(100),
            ..roomy()
        },
    );
    let started = std::time::Instant::now();
    let (host, report, _) = start(&sb, |mut p| {
        p.hello();
        p.register_tool("t");
        p.serve("served");
    });
    let Outcome::Started(r) = &report.loaded[0].outcome else {
        panic!("{:?}", report.loaded[0].outcome)
    };
    assert_eq!(r.phase, Phase::Ready { auto: true });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited for the 20 s ready timeout"
    );
    let warning = "sent no ready frame and nothing else for 100 ms; auto-readied";
    assert!(r.warnings.iter().any(|w| w == warning), "{:?}", r.warnings);
    assert_eq!(text_of(&call(&host, "t", json!({}))), "served");
    host.shutdown();
}

#[test]
fn progress_restarts_a_calls_deadline_up_to_ten_timeouts() {
    let sb = sandbox(
        &["busy"],
        Deadlines {
            tool: Duration::from_millis(150),
            ..roomy()
        },
    );
    let (host, _, _) = start(&sb, |mut p| {
        p.hello();
        p.register_tool("alive");
        p.register_tool("endless");
        p.ready();
        while let Some(f) = p.recv() {
            let id = f["id"].clone();
            let progress = |p: &mut Peer, n: u32| {
                p.send(json!({"type": "tool_progress", "id": id, "message": "step", "progress": n}))
            };
            match f["name"].as_str() {
                // Six times the timeout in all, never silent for long.
                Some("alive") => {
                    for n in 0..18 {
                        std::thread::sleep(Duration::from_millis(50));
                        progress(&mut p, n);
                    }
                    p.reply(&f, "alive done");
                }
                // Progress forever: the cap ends it.
                Some("endless") => {
                    for n in 0..100 {
                        std::thread::sleep(Duration::from_millis(20));
                        if !progress(&mut p, n) {
                            return;
                        }
                    }
                    p.reply(&f, "too late");
                }
                _ if f["type"] == "shutdown" => return,
                _ => {}
            }
        }
    });
    let mut seen = Vec::new();
    let reply = host
        .call_tool_with_progress("alive", &json!({}), &CancelToken::never(), &mut |ext, p| {
            seen.push((ext.to_string(), p.message.clone(), p.progress))
        })
        .unwrap();
    assert!(!reply.is_error, "{}", text_of(&reply));
    assert_eq!(text_of(&reply), "alive done");
    assert_eq!(seen.len(), 18, "one report per frame");
    assert_eq!(seen[3], ("busy".into(), Some("step".into()), Some(3.0)));

    let started = std::time::Instant::now();
    let reply = call(&host, "endless", json!({}));
    assert!(reply.is_error);
    assert!(text_of(&reply).contains("timeout"), "{}", text_of(&reply));
    // Alive well past one timeout, and ended by the cap (the tool itself
    // would answer after 2 s, without an error).
    assert!(started.elapsed() >= Duration::from_millis(1400));
    host.shutdown();
}

#[test]
fn frames_go_straight_into_the_pipe_until_one_does_not_fit_then_a_writer_takes_over_in_order() {
    let sb = sandbox(&["direct"], roomy());
    let (seen_tx, seen_rx) = crossbeam_channel::unbounded::<(String, usize)>();
    // The extension stops reading after its first call until `go`: the
    // pipe then fills for certain.
    let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(1);
    let (host, _, sink) = start(&sb, move |mut p| {
        p.hello();
        p.send(json!({"type": "subscribe", "events": ["turn_end"]}));
        p.register_tool("t");
        p.ready();
        let f = p.expect("tool_call");
        p.reply(&f, "ok");
        let _ = go_rx.recv();
        while let Some(f) = p.recv() {
            match f["type"].as_str() {
                Some("event") => {
                    let text = f["text"].as_str().unwrap_or_default();
                    let tag = text.split(':').next().unwrap_or_default().to_string();
                    let _ = seen_tx.send((tag, text.len()));
                }
                Some("tool_call") => p.reply(&f, "ok"),
                Some("shutdown") => return,
                _ => {}
            }
        }
    });
    assert_eq!(host.extensions().len(), 1, "{:?}", events(&sink));
    // The handshake and a call: every frame fits the pipe at once, so
    // the extension has its reader thread and no writer thread.
    assert_eq!(text_of(&call(&host, "t", json!({}))), "ok");
    assert_eq!(host.live_threads(), 1, "a writer thread started early");
    // 200 KiB is more than a pipe holds: the first part is written
    // directly, the rest by a writer thread that starts for it, and the
    // small frame after it must not overtake it.
    let big = format!("big:{}", "y".repeat(200 * 1024));
    for text in [big.clone(), "small:1".to_string()] {
        host.emit_event(&zut_ext::wire::EventPayload {
            text,
            ..zut_ext::wire::EventPayload::named("turn_end")
        });
    }
    assert_eq!(host.live_threads(), 2, "no writer thread took over");
    go_tx.send(()).expect("go");
    let got: Vec<(String, usize)> = (0..2)
        .map(|_| {
            seen_rx
                .recv_timeout(Duration::from_secs(20))
                .expect("event")
        })
        .collect();
    assert_eq!(
        got,
        vec![("big".to_string(), big.len()), ("small".to_string(), 7)]
    );
    // Frames still arrive through the writer.
    assert_eq!(text_of(&call(&host, "t", json!({}))), "ok");
    host.shutdown();
    assert_eq!(host.live_threads(), 0);
}

#[test]
fn reloads_let_go_of_the_connections_they_ended() {
    let sb = sandbox(&["svc"], roomy());
    let (host, _, _) = start(&sb, plain);
    let first = Arc::downgrade(&host.view().exts[0].conn);
    // The first instance's connection (its pipes, log descriptor and
    // thread handles) must be dropped once it has ended and a later
    // instance ends too; it must not live as long as the host.
    let mut reloads = 0;
    while first.upgrade().is_some() {
        assert!(
            reloads < 5,
            "the first connection is still held after {reloads} reloads"
        );
        assert_eq!(host.reload().generation, reloads + 1);
        reloads += 1;
    }
    assert_eq!(text_of(&call(&host, "t", json!({}))), "svc");
    host.shutdown();
    assert_eq!(host.live_threads(), 0);
}
