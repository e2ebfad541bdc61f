//! `zut ext doctor` against real fixture extensions: one report per
//! discovered directory, the right status for each failure kind, line
//! breaks kept, JSON for scripts, exit status 1 unless all is healthy.

mod support;

use support::*;
use zut::cancel::CancelToken;
use zut::cli::{run_ext_io, CliContext, Io};

fn doctor(ctx: &CliContext, args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        out_is_tty: false,
        color: false,
        cancel: CancelToken::never(),
    };
    let mut argv = vec!["doctor".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let code = run_ext_io(&argv, ctx, &mut io);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn ctx(sb: &Sandbox, ext_paths: Vec<std::path::PathBuf>) -> CliContext {
    CliContext {
        cwd: sb.cwd(),
        zut_home: sb.home(),
        ext_paths,
        no_extensions: false,
    }
}

#[test]
fn doctor_reports_every_kind_of_problem() {
    let sb = Sandbox::new();
    let flags = vec![
        sb.fixture("fx-normal", &[]),
        sb.fixture("fx-conflicts", &[]),
        sb.fixture("fx-exit-3", &[]),
        sb.fixture("fx-wrong-protocol", &[]),
        sb.fixture("fx-garbage", &[]),
    ];
    // A project copy shadows a global one; a disabled and a broken one.
    let project = sb.cwd().join(".zut/extensions");
    let global = sb.home().join("extensions");
    for (root, name, json) in [
        (
            &project,
            "dup",
            r#"{"name":"dup","exec":"sh","args":["-c","exit 0"]}"#,
        ),
        (&global, "dup", r#"{"name":"dup","exec":"sh"}"#),
        (
            &global,
            "off",
            r#"{"name":"off","exec":"sh","enabled":false}"#,
        ),
        (
            &global,
            "broken",
            r#"{"name":"broken","exec":"../../outside"}"#,
        ),
    ] {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("extension.json"), json).unwrap();
    }
    // Untrusted, the project copy is reported as such and not started.
    let (_, out, _) = doctor(&ctx(&sb, Vec::new()), &["--json", "dup"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let project_dup = &doc["extensions"][0];
    assert_eq!(
        (&project_dup["source"], &project_dup["status"]),
        (&"project".into(), &"untrusted".into())
    );
    assert!(
        project_dup["warnings"][0]
            .as_str()
            .unwrap()
            .contains("zut ext trust "),
        "{out}"
    );
    assert_eq!(doc["extensions"][1]["source"], "global");
    assert_ne!(
        doc["extensions"][1]["status"], "shadowed",
        "an untrusted copy shadows nothing"
    );
    let trusted = run_ext_io(
        &["trust".to_string()],
        &ctx(&sb, Vec::new()),
        &mut Io {
            out: &mut Vec::new(),
            err: &mut Vec::new(),
            out_is_tty: false,
            color: false,
            cancel: CancelToken::never(),
        },
    );
    assert_eq!(trusted, 0);
    let (code, out, err) = doctor(&ctx(&sb, flags), &["--json"]);
    assert_eq!(code, 1, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["healthy"], false);
    let by_name = |n: &str, source: &str| {
        doc["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n && e["source"] == source)
            .unwrap_or_else(|| panic!("{n} missing from {out}"))
            .clone()
    };
    let normal = by_name("fx-normal", "flag");
    assert_eq!(normal["status"], "ok");
    assert_eq!(normal["ready"], "ready");
    assert!(
        normal["commands"]
            .as_array()
            .unwrap()
            .contains(&"Ping".into()),
        "bare names, as in ext_loaded"
    );
    assert!(normal["tools"]
        .as_array()
        .unwrap()
        .contains(&"fx_hidden (deferred)".into()));
    assert!(normal["log"]
        .as_str()
        .unwrap()
        .ends_with("logs/ext-fx-normal.log"));
    let conflicts = by_name("fx-conflicts", "flag");
    assert_eq!(conflicts["status"], "warning");
    let c = conflicts["conflicts"].to_string();
    assert!(
        c.contains("/echo refused: already registered by extension fx-normal")
            && c.contains("reserved"),
        "{c}"
    );
    let exit3 = by_name("fx-exit-3", "flag");
    assert_eq!(exit3["status"], "error");
    let e = exit3["error"].as_str().unwrap();
    assert!(
        e.contains("exit status 3")
            && !e.contains("directory: ")
            && e.contains("fx: giving up before hello"),
        "{e}"
    );
    assert!(by_name("fx-wrong-protocol", "flag")["error"]
        .as_str()
        .unwrap()
        .contains("protocol version 1"));
    assert_eq!(by_name("fx-garbage", "flag")["status"], "warning");
    assert_eq!(
        by_name("dup", "project")["status"],
        "error",
        "sh -c 'exit 0' never says hello"
    );
    let shadowed = by_name("dup", "global");
    assert_eq!(shadowed["status"], "shadowed");
    assert!(shadowed["shadowed_by"]
        .as_str()
        .unwrap()
        .ends_with(".zut/extensions/dup"));
    assert_eq!(by_name("off", "global")["status"], "disabled");
    assert!(by_name("broken", "global")["error"]
        .as_str()
        .unwrap()
        .contains("\"exec\""));
}

#[test]
fn doctor_text_keeps_line_breaks_and_filters_by_name() {
    let sb = Sandbox::new();
    let flags = vec![sb.fixture("fx-normal", &[]), sb.fixture("fx-exit-3", &[])];
    let (code, out, _) = doctor(&ctx(&sb, flags.clone()), &["fx-exit-3"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("zut extension doctor\n"), "{out}");
    assert!(out.contains("fx-exit-3 [flag] error"), "{out}");
    assert!(
        out.contains("exit status 3\n      last lines of its stderr:"),
        "{out}"
    );
    assert!(!out.contains("fx-normal [flag]"), "filtered: {out}");
    let (code, out, _) = doctor(&ctx(&sb, flags.clone()), &["fx-normal"]);
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = doctor(&ctx(&sb, flags), &["fx-nromal"]);
    assert_eq!(code, 1);
    assert!(err.contains("did you mean \"fx-normal\""), "{err}");
}

#[test]
fn doctor_names_each_failure_kind_of_the_host_core_fixtures() {
    let sb = Sandbox::new();
    let kinds = [
        ("fx-no-hello", "error", "sent no hello within 8000 ms"),
        ("fx-exit-3", "error", "exited before hello: exit status 3"),
        ("fx-killed", "error", "killed by signal 9"),
        (
            "fx-wrong-protocol",
            "error",
            "unsupported protocol version 1",
        ),
        ("fx-wrong-name", "error", "someone-else"),
        (
            "fx-frame-before-hello",
            "error",
            "notify frame before hello",
        ),
        ("fx-no-ready", "warning", "auto-readied"),
        ("fx-banner", "warning", "not a JSON frame"),
        ("fx-garbage", "warning", "not a JSON frame"),
        ("fx-bad-utf8", "warning", "not valid UTF-8"),
        ("fx-conflicts", "warning", "reserved"),
        (
            "fx-ignore-sigterm",
            "warning",
            "command /echo refused: already registered by extension fx-garbage",
        ),
        ("sh-hello", "ok", ""),
    ];
    let mut cmd = zut(&sb);
    for (name, _, _) in kinds {
        cmd.arg("-e").arg(sb.fixture(name, &[]));
    }
    // Twelve Python fixtures start at once: on a loaded 2-core machine one
    // can take seconds to say hello, so the deadline leaves room for that.
    let out = cmd
        .env("ZUT_HELLO_TIMEOUT_MS", "8000")
        .env("ZUT_READY_TIMEOUT_MS", "300")
        .env("ZUT_KILL_GRACE_MS", "200")
        .args(["ext", "doctor", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reports = doc["extensions"].as_array().unwrap();
    assert_eq!(reports.len(), kinds.len());
    for ((name, status, needle), r) in kinds.iter().zip(reports) {
        assert_eq!(r["name"], *name, "load order kept");
        assert_eq!(r["status"], *status, "{name}: {r}");
        let all = format!("{}{}{}", r["error"], r["warnings"], r["conflicts"]);
        assert!(all.contains(needle), "{name}: {needle:?} not in {all}");
        assert!(
            r["log"]
                .as_str()
                .unwrap()
                .ends_with(&format!("logs/ext-{name}.log")),
            "{r}"
        );
    }
}

#[test]
fn doctor_advice_names_the_disabled_extension() {
    let sb = Sandbox::new();
    let dir = sb.home().join("extensions/weather");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        r#"{"name":"weather","exec":"sh","enabled":false}"#,
    )
    .unwrap();
    let (code, out, _) = doctor(&ctx(&sb, Vec::new()), &[]);
    assert_eq!(code, 0, "disabled is a choice, not a problem: {out}");
    assert!(out.contains("zut ext enable weather"), "{out}");
    assert!(!out.contains("NAME"), "{out}");
}
