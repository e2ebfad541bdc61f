//! The extension host core against real fixture extensions over real pipes:
//! handshake, registration, fault isolation and shutdown. Every test ends
//! with `shutdown_clean`: no child left unreaped, no host thread running.

mod support;

use std::time::{Duration, Instant};
use support::*;
use zut::cancel::CancelToken;
use zut::events::Event;
use zut::host::{CommandError, Phase};

fn never() -> CancelToken {
    CancelToken::never()
}

#[test]
fn normal_extension_handshakes_and_registers() {
    let sb = Sandbox::new();
    let ack = sb.path("ack.json");
    let dir = sb.fixture("fx-normal", &[opt("ackfile", &ack)]);
    let (host, sink) = sb.start(std::slice::from_ref(&dir));
    let events = sink.events();
    match &events[0] {
        Event::ExtLoaded {
            extension,
            version,
            commands,
            tools,
            source,
        } => {
            assert_eq!(extension, "fx-normal");
            assert_eq!(version, "1.2.3");
            assert!(commands.contains(&"Ping".to_string()));
            assert!(tools.contains(&"fx_normal_echo".to_string()));
            assert_eq!(source, "flag");
        }
        other => panic!("first event {other:?}"),
    }
    let ack: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ack).unwrap()).unwrap();
    assert_eq!(ack["type"], "hello_ack");
    assert_eq!(ack["protocol_version"], 2);
    assert_eq!(ack["provider"], "script");
    assert_eq!(ack["model"], "test-model");
    assert_eq!(ack["cwd"], sb.cwd().display().to_string());
    assert_eq!(ack["extension_dir"], dir.display().to_string());
    assert_eq!(ack["data_dir"], dir.display().to_string());
    assert_eq!(ack["zut_version"], env!("CARGO_PKG_VERSION"));
    // Case-insensitive lookup, canonical spelling sent.
    let reply = host.invoke_command("PING", "", &never()).unwrap();
    assert_eq!(
        (reply.name.as_str(), reply.display.as_str()),
        ("Ping", "pong")
    );
    let reply = host
        .invoke_command("echo", "  hello world  ", &never())
        .unwrap();
    assert_eq!(reply.display, "echo: hello world");
    assert!(matches!(
        host.extensions()[0].phase,
        Phase::Ready { auto: false }
    ));
    shutdown_clean(host);
}

#[test]
fn shell_extension_works() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[sb.fixture("sh-hello", &[])]);
    assert!(loaded(&sink.events(), "sh-hello"));
    assert_eq!(
        host.invoke_command("shping", "", &never()).unwrap().display,
        "pong from sh"
    );
    shutdown_clean(host);
}

fn load_error(
    fixture: &str,
    extra: &[String],
    tweak: impl FnOnce(&mut zut::host::HostConfig),
) -> (String, Sandbox) {
    let sb = Sandbox::new();
    let dir = sb.fixture(fixture, extra);
    let mut config = sb.config();
    tweak(&mut config);
    let (host, sink) = sb.start_with(config, std::slice::from_ref(&dir));
    let events = sink.events();
    let msg = error_of(&events, fixture)
        .unwrap_or_else(|| panic!("no ext_error for {fixture}: {events:?}"));
    // Every load error names the extension, its directory, executable,
    // language and log.
    for needle in [
        fixture,
        &dir.display().to_string(),
        "python3",
        "python",
        "ext-",
    ] {
        assert!(msg.contains(needle), "{needle:?} missing from {msg}");
    }
    assert!(host.extensions().is_empty());
    shutdown_clean(host);
    (msg, sb)
}

#[test]
fn no_hello_fails_at_the_deadline() {
    let (msg, _) = load_error("fx-no-hello", &[], |c| {
        c.deadlines.hello = Duration::from_millis(300)
    });
    assert!(msg.contains("sent no hello within 300 ms"), "{msg}");
}

#[test]
fn slow_hello_within_the_deadline_loads() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[sb.fixture("fx-slow-hello", &["delay=0.2".into()])]);
    assert!(loaded(&sink.events(), "fx-slow-hello"));
    shutdown_clean(host);
}

#[test]
fn slow_hello_past_the_deadline_fails() {
    let (msg, _) = load_error("fx-slow-hello", &["delay=5".into()], |c| {
        c.deadlines.hello = Duration::from_millis(200)
    });
    assert!(msg.contains("sent no hello"), "{msg}");
}

#[test]
fn exit_before_hello_reports_status_and_keeps_stderr() {
    let (msg, sb) = load_error("fx-exit-3", &[], |_| {});
    assert!(msg.contains("exited before hello: exit status 3"), "{msg}");
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-exit-3.log")).unwrap();
    assert!(log.contains("giving up before hello"), "{log}");
}

#[test]
fn killed_before_hello_reports_the_signal() {
    let (msg, _) = load_error("fx-killed", &[], |_| {});
    assert!(msg.contains("killed by signal 9 (SIGKILL)"), "{msg}");
}

#[test]
fn wrong_protocol_is_rejected() {
    let (msg, _) = load_error("fx-wrong-protocol", &[], |_| {});
    assert!(msg.contains("unsupported protocol version 1"), "{msg}");
}

#[test]
fn wrong_name_is_rejected() {
    let (msg, _) = load_error("fx-wrong-name", &[], |_| {});
    assert!(msg.contains("\"someone-else\""), "{msg}");
}

#[test]
fn frame_before_hello_is_a_protocol_error() {
    let (msg, _) = load_error("fx-frame-before-hello", &[], |_| {});
    assert!(msg.contains("notify frame before hello"), "{msg}");
}

#[test]
fn missing_launcher_names_the_path_searched() {
    let sb = Sandbox::new();
    let dir = sb.fixture("fx-normal", &[]);
    let mut config = sb.config();
    config.search_path = Some("/nonexistent-bin".into());
    let (host, sink) = sb.start_with(config, &[dir]);
    let msg = error_of(&sink.events(), "fx-normal").unwrap();
    assert!(
        msg.contains("not found on PATH (/nonexistent-bin)"),
        "{msg}"
    );
    shutdown_clean(host);
}

#[test]
fn banner_before_hello_is_skipped_with_a_warning() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[sb.fixture("fx-banner", &[])]);
    let events = sink.events();
    assert!(loaded(&events, "fx-banner"));
    let w = warnings_of(&events, "fx-banner");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("not a JSON frame") && w[0].contains("Starting fixture"),
        "{w:?}"
    );
    shutdown_clean(host);
}

#[test]
fn never_ready_is_auto_readied_with_a_warning() {
    let sb = Sandbox::new();
    let dir = sb.fixture("fx-no-ready", &[]);
    let mut config = sb.config();
    config.deadlines.ready = Duration::from_millis(300);
    let (host, sink) = sb.start_with(config, &[dir]);
    let events = sink.events();
    assert!(loaded(&events, "fx-no-ready"));
    assert!(warnings_of(&events, "fx-no-ready")
        .iter()
        .any(|w| w.contains("auto-readied")));
    assert_eq!(host.extensions()[0].phase, Phase::Ready { auto: true });
    shutdown_clean(host);
}

#[test]
fn registration_conflicts_follow_load_order_not_timing() {
    let sb = Sandbox::new();
    // fx-normal is slow to say hello, so fx-conflicts registers first in
    // time; load order must still give /echo to fx-normal.
    let normal = sb.fixture("fx-slow-hello", &["delay=0.3".into()]);
    let conflicts = sb.fixture("fx-conflicts", &[]);
    let (host, sink) = sb.start(&[normal, conflicts]);
    let events = sink.events();
    assert_eq!(host.command("echo").unwrap().extension, "fx-slow-hello");
    assert_eq!(host.command("dup").unwrap().name, "Dup");
    let w = warnings_of(&events, "fx-conflicts");
    for needle in [
        "/dup refused",
        "/help refused",
        "/echo refused",
        "tool read refused",
        "tool web_search",
        "tool plan",
    ] {
        assert!(
            w.iter().any(|m| m.contains(needle)),
            "{needle} not in {w:?}"
        );
    }
    assert!(host.tool("read").is_none() && host.tool("conf_tool").is_some());
    // Refusals reach the log once the load is reported; the dispatcher
    // answers any later request only after that.
    let _ = host.all_extensions();
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-conflicts.log")).unwrap();
    assert!(
        log.contains("/echo refused: already registered by extension fx-slow-hello"),
        "{log}"
    );
    // Events come in load order too.
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ExtLoaded { extension, .. } => Some(extension.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["fx-slow-hello", "fx-conflicts"]);
    shutdown_clean(host);
}

#[test]
fn garbage_and_invalid_utf8_lines_are_skipped() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[
        sb.fixture("fx-garbage", &[]),
        sb.fixture("fx-bad-utf8", &[]),
    ]);
    let events = sink.events();
    assert!(loaded(&events, "fx-garbage") && loaded(&events, "fx-bad-utf8"));
    // Once per extension and kind, although fx-garbage printed two lines.
    assert_eq!(warnings_of(&events, "fx-garbage").len(), 1);
    assert!(warnings_of(&events, "fx-bad-utf8")[0].contains("UTF-8"));
    let noise = host.extensions()[0].noise.clone();
    assert_eq!(noise.get("not a frame"), Some(&2));
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-garbage.log")).unwrap();
    assert!(
        log.contains("frame of unknown type \"future_frame\" ignored"),
        "{log}"
    );
    assert_eq!(
        host.invoke_command("Ping", "", &never()).unwrap().display,
        "pong"
    );
    shutdown_clean(host);
}

#[test]
fn oversize_line_disconnects_only_that_extension() {
    let sb = Sandbox::new();
    let big = sb.fixture("fx-oversize", &[]);
    let ok = sb.fixture("sh-hello", &[]);
    let (host, sink) = sb.start(&[big, ok]);
    let err = host
        .invoke_command("echo", "", &never())
        .unwrap_err()
        .to_string();
    assert!(err.contains("frame limit"), "{err}");
    let msg = error_of(&sink.events(), "fx-oversize").unwrap();
    assert!(msg.contains("32 MiB frame limit"), "{msg}");
    assert!(sink.events().contains(&Event::ExtChromeClear {
        extension: "fx-oversize".into()
    }));
    assert!(host.command("echo").is_none(), "its commands are gone");
    assert_eq!(
        host.invoke_command("shping", "", &never()).unwrap().display,
        "pong from sh"
    );
    shutdown_clean(host);
}

#[test]
fn a_crash_fails_pending_calls_at_once_and_spares_the_rest() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[sb.fixture("fx-normal", &[]), sb.fixture("sh-hello", &[])]);
    let started = Instant::now();
    let err = host
        .invoke_command("die", "", &never())
        .unwrap_err()
        .to_string();
    assert!(err.contains("exit status 7"), "{err}");
    assert!(
        started.elapsed() < host.deadlines().command,
        "failed by the crash, not by the timeout"
    );
    assert!(error_of(&sink.events(), "fx-normal")
        .unwrap()
        .contains("exit status 7"));
    let err = host.invoke_command("Ping", "", &never()).unwrap_err();
    assert!(matches!(err, CommandError::Unknown(_)), "{err:?}");
    let err = err.to_string();
    assert!(
        err.starts_with(
            "/Ping belongs to extension fx-normal, which is not running (exited: exit status 7"
        ),
        "{err}"
    );
    assert_eq!(
        host.invoke_command("shping", "", &never()).unwrap().display,
        "pong from sh"
    );
    shutdown_clean(host);
}

#[test]
fn command_timeout_fails_clearly() {
    let sb = Sandbox::new();
    let mut config = sb.config();
    config.deadlines.command = Duration::from_millis(200);
    let (host, _) = sb.start_with(config, &[sb.fixture("fx-normal", &[])]);
    let err = host.invoke_command("hang", "", &never()).unwrap_err();
    assert!(
        matches!(&err, CommandError::TimedOut { extension, command, after }
            if extension == "fx-normal" && command == "hang" && *after == Duration::from_millis(200)),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "timeout waiting for fx-normal/hang after 200 ms"
    );
    shutdown_clean(host);
}

#[test]
fn shutdown_acks_are_quick_and_frames_arrive_then_eof() {
    let sb = Sandbox::new();
    let marker = sb.path("marker");
    let (host, _) = sb.start(&[sb.fixture("fx-normal", &[opt("marker", &marker)])]);
    let handle = host.handle();
    shutdown_clean(host);
    let ext = handle.extensions()[0].clone();
    assert!(ext.shutdown_acked);
    assert_eq!(
        ext.exit.and_then(|s| s.code()),
        Some(0),
        "it exited by itself, no signal needed"
    );
    let seen = std::fs::read_to_string(&marker).unwrap();
    assert!(seen.ends_with("hello_ack\nshutdown\n"), "{seen}");
}

#[test]
fn holdouts_are_terminated_then_killed() {
    let sb = Sandbox::new();
    let dirs = [
        sb.fixture("fx-ignore-shutdown", &[]),
        sb.fixture("fx-ignore-sigterm", &[]),
        sb.fixture("sh-ignore-term", &[]),
    ];
    let (host, sink) = sb.start(&dirs);
    assert_eq!(host.extensions().len(), 3, "{:?}", sink.events());
    let handle = host.handle();
    shutdown_clean(host);
    let exts = handle.extensions();
    // SIGTERM ended the first; the others needed SIGKILL.
    let status = |i: usize| {
        exts[i]
            .exit
            .map(|s| std::os::unix::process::ExitStatusExt::signal(&s))
    };
    assert_eq!(status(0), Some(Some(libc::SIGTERM)));
    assert_eq!(status(1), Some(Some(libc::SIGKILL)));
    assert_eq!(status(2), Some(Some(libc::SIGKILL)));
}

#[test]
fn a_grandchild_holding_stdout_is_killed_with_its_group() {
    let sb = Sandbox::new();
    let pidfile = sb.path("pids");
    let (host, _) = sb.start(&[sb.fixture("fx-grandchild", &[opt("pidfile", &pidfile)])]);
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    shutdown_clean(host);
    // The grandchild is not our child: init reaps it, shortly after the kill.
    assert!(
        eventually(Duration::from_secs(2), || !pid_exists(pids[1])),
        "grandchild {} survived",
        pids[1]
    );
}

#[test]
fn a_child_exit_is_seen_even_while_a_grandchild_holds_stdout() {
    let sb = Sandbox::new();
    let pidfile = sb.path("pids");
    let (host, sink) = sb.start(&[sb.fixture("fx-grandchild", &[opt("pidfile", &pidfile)])]);
    let err = host
        .invoke_command("die", "", &never())
        .unwrap_err()
        .to_string();
    assert!(err.contains("exit status 7"), "{err}");
    assert!(error_of(&sink.events(), "fx-grandchild").is_some());
    shutdown_clean(host);
}

#[test]
fn disabled_and_theme_only_extensions_are_not_started() {
    let sb = Sandbox::new();
    let disabled = sb.fixture("fx-normal", &[]);
    let path = disabled.join("extension.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["enabled"] = false.into();
    std::fs::write(&path, m.to_string()).unwrap();
    let theme = sb.path("exts/theme-only");
    std::fs::create_dir_all(&theme).unwrap();
    std::fs::write(theme.join("extension.json"), r#"{"name":"theme-only"}"#).unwrap();
    std::fs::write(theme.join("theme.json"), r#"{"name":"t"}"#).unwrap();
    let (host, sink) = sb.start(&[disabled, theme]);
    assert!(host.extensions().is_empty());
    assert!(matches!(
        host.loaded()[1].outcome,
        zut::host::Outcome::ThemeOnly
    ));
    assert!(warnings_of(&sink.events(), "fx-normal")[0].contains("disabled"));
    shutdown_clean(host);
}

#[test]
fn manifest_errors_are_reported_with_directory_and_field() {
    let sb = Sandbox::new();
    let bad = sb.path("exts/bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("extension.json"),
        r#"{"name":"bad","exec":"../../escape"}"#,
    )
    .unwrap();
    let (host, sink) = sb.start(std::slice::from_ref(&bad));
    let msg = error_of(&sink.events(), "bad").unwrap();
    assert!(
        msg.contains(&bad.display().to_string()) && msg.contains("\"exec\""),
        "{msg}"
    );
    shutdown_clean(host);
}

#[test]
fn a_flood_of_stray_lines_is_counted_not_logged() {
    let sb = Sandbox::new();
    let (host, sink) = sb.start(&[sb.fixture("fx-normal", &[])]);
    let reply = host.invoke_command("flood", "20000", &never()).unwrap();
    assert_eq!(reply.display, "flooded");
    assert_eq!(warnings_of(&sink.events(), "fx-normal").len(), 1);
    let noise = host.extensions()[0].noise.clone();
    assert_eq!(noise.get("not a frame"), Some(&20000));
    let log = std::fs::read_to_string(sb.home().join("logs/ext-fx-normal.log")).unwrap();
    assert_eq!(log.matches("stdout line skipped").count(), 20, "{log}");
    assert!(log.contains("further not a frame lines are counted, not logged"));
    assert_eq!(
        host.invoke_command("Ping", "", &never()).unwrap().display,
        "pong"
    );
    shutdown_clean(host);
}

#[test]
fn frames_sent_while_others_load_follow_their_ext_loaded() {
    let sb = Sandbox::new();
    let slow = sb.fixture("fx-slow-hello", &["delay=0.4".into()]);
    let quick = sb.fixture("sh-hello", &[]);
    let chatty = sb.fixture("fx-normal", &["greet=hi early".into()]);
    let (host, sink) = sb.start(&[slow, quick, chatty]);
    let order: Vec<String> = sink
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::ExtLoaded { extension, .. } => Some(format!("loaded {extension}")),
            Event::ExtNotify {
                extension, message, ..
            } => Some(format!("notify {extension} {message}")),
            _ => None, // fx-normal's clashes with fx-slow-hello are warnings
        })
        .collect();
    assert_eq!(
        order,
        [
            "loaded fx-slow-hello",
            "loaded sh-hello",
            "loaded fx-normal",
            "notify fx-normal hi early"
        ]
    );
    shutdown_clean(host);
}
