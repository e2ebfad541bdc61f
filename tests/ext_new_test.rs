//! `zut ext new` and `zut ext test` through the real binary.
//!
//! - each scaffold (python, typescript, sh) is written into a temporary
//!   project, then run with `zut --ext DIR -p "/NAME hi"` and checked with
//!   `zut ext test DIR` and its own `test.sh`; the Rust scaffold is checked
//!   by its files and `cargo metadata --offline` (building it would compile
//!   serde from scratch, far beyond what a test may take);
//! - every example extension that needs no build (and the Rust ones already
//!   built) passes `zut ext test`;
//! - fixtures that each break one rule fail exactly that check, with a
//!   reason that says what happened.
//!
//! Deadlines are shortened through the ZUT_*_TIMEOUT_MS variables.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{build_example, Sandbox};

/// `zut` in the sandbox with deadlines short enough for tests.
fn zut(sb: &Sandbox) -> std::process::Command {
    let mut c = support::zut(sb);
    c.env("ZUT_HELLO_TIMEOUT_MS", "5000")
        .env("ZUT_READY_TIMEOUT_MS", "1500")
        .env("ZUT_COMMAND_TIMEOUT_MS", "3000")
        .env("ZUT_TOOL_TIMEOUT_MS", "3000")
        .env("ZUT_SHUTDOWN_GRACE_MS", "1500")
        .env("ZUT_KILL_GRACE_MS", "500");
    c
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One verdict of `zut ext test --json`.
#[derive(Debug)]
struct Check {
    check: String,
    status: String,
    reason: String,
}

/// Runs `zut ext test --json DIR`: the exit code and the verdicts.
fn ext_test(sb: &Sandbox, dir: &Path) -> (Option<i32>, Vec<Check>, String) {
    ext_test_env(sb, dir, &[])
}

/// [`ext_test`] with extra environment variables.
fn ext_test_env(
    sb: &Sandbox,
    dir: &Path,
    env: &[(&str, &str)],
) -> (Option<i32>, Vec<Check>, String) {
    let mut cmd = zut(sb);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .args(["ext", "test", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    let all = text(&out);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {all}"));
    let checks = rows
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {all}"))
        .iter()
        .map(|r| Check {
            check: r["check"].as_str().unwrap().to_string(),
            status: r["status"].as_str().unwrap().to_string(),
            reason: r["reason"].as_str().unwrap().to_string(),
        })
        .collect();
    (out.status.code(), checks, all)
}

/// Asserts that nothing failed and the core checks passed.
fn assert_passes(sb: &Sandbox, dir: &Path) -> Vec<Check> {
    let (code, checks, all) = ext_test(sb, dir);
    assert_eq!(code, Some(0), "{}: {all}", dir.display());
    assert!(checks.iter().all(|c| c.status != "FAIL"), "{all}");
    for want in ["manifest", "start", "hello", "shutdown", "exit", "stdout"] {
        assert!(
            checks.iter().any(|c| c.check == want && c.status == "PASS"),
            "{want} did not pass for {}: {all}",
            dir.display()
        );
    }
    checks
}

/// Writes a scaffold with `zut ext new`, then runs and tests it.
fn scaffold_works(lang: &str, name: &str, main: &str) {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["ext", "new", name, "--lang", lang])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = sb.cwd().join(name);
    for f in ["extension.json", "README.md", "test.sh", main] {
        assert!(dir.join(f).is_file(), "{lang}: {f} missing");
    }
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("zut ext test ."), "{readme}");
    runs_and_passes(&sb, &dir, name, lang);
}

/// A written (and, for Rust, built) scaffold answers its command, passes
/// `zut ext test`, and its own `test.sh` passes with this zut.
fn runs_and_passes(sb: &Sandbox, dir: &Path, name: &str, lang: &str) {
    let out = zut(sb)
        .arg("--ext")
        .arg(dir)
        .args(["-p", &format!("/{name} hi")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("hello, hi from {name}"),
        "{}",
        text(&out)
    );

    let checks = assert_passes(sb, dir);
    let tool = format!("tool {name}_echo");
    let command = format!("command /{name}");
    for want in ["ready", "registrations", &tool, &command, "unknown frame"] {
        assert!(
            checks.iter().any(|c| c.check == want && c.status == "PASS"),
            "{lang}: {want} did not pass: {checks:?}"
        );
    }

    // The scaffold's own test, with this zut.
    let out = std::process::Command::new(dir.join("test.sh"))
        .env("ZUT", env!("CARGO_BIN_EXE_zut"))
        .env("PATH", support::search_path())
        .env("ZUT_HOME", sb.home())
        .env("ZUT_SHUTDOWN_GRACE_MS", "1500")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("PASS tool {name}_echo: ")),
        "{}",
        text(&out)
    );
}

#[test]
fn python_scaffold_runs_at_once_and_passes_its_test() {
    scaffold_works("python", "hi", "main.py");
}

#[test]
fn javascript_scaffold_runs_at_once_and_passes_its_test() {
    scaffold_works("javascript", "hijs", "index.js");
}

#[test]
fn typescript_scaffold_is_real_typescript_built_by_npm() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["ext", "new", "hits", "--lang", "typescript"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = sb.cwd().join("hits");
    for f in [
        "index.ts",
        "tsconfig.json",
        "package.json",
        "zut-ext.js",
        "zut-ext.d.ts",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    assert!(
        !dir.join("index.js").exists(),
        "index.js is built, not written"
    );
    let ts = std::fs::read_to_string(dir.join("index.ts")).unwrap();
    assert!(ts.contains("import * as zx from \"./zut-ext.js\""), "{ts}");
    let pkg: Value =
        serde_json::from_slice(&std::fs::read(dir.join("package.json")).unwrap()).unwrap();
    assert_eq!(pkg["scripts"]["build"], "tsc -p .", "{pkg}");
    assert!(pkg["devDependencies"]["typescript"].is_string(), "{pkg}");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("npm install && npm run build"), "{readme}");
    assert!(
        !readme.contains("npx tsc"),
        "npx tsc may run another package: {readme}"
    );

    // npm fetches the compiler (from its cache when warm); without a
    // registry the build cannot be checked here, and the test says so.
    let npm = |args: &[&str]| {
        std::process::Command::new("npm")
            .args(args)
            .current_dir(&dir)
            .env("PATH", support::search_path())
            .output()
    };
    match npm(&["install", "--no-audit", "--no-fund", "--prefer-offline"]) {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "SKIPPED the TypeScript build: npm install failed (no registry?): {}",
                text(&o)
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED the TypeScript build: npm cannot run: {e}");
            return;
        }
    }
    let out = npm(&["run", "build"]).unwrap();
    assert!(out.status.success(), "npm run build: {}", text(&out));
    assert!(dir.join("index.js").is_file(), "the build wrote index.js");
    runs_and_passes(&sb, &dir, "hits", "typescript");
    // The typed tool checks its arguments before the handler runs.
    let checks = assert_passes(&sb, &dir);
    assert!(
        checks
            .iter()
            .any(|c| c.check == "tool hits_echo" && c.status == "PASS"),
        "{checks:?}"
    );
}

#[test]
fn a_name_starting_with_a_dash_is_refused_and_nothing_is_written() {
    let sb = Sandbox::new();
    for name in ["-rf", "--help-me", "-"] {
        let out = zut(&sb).args(["ext", "new", "--", name]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("cannot start with '-'"),
            "{name}: {}",
            text(&out)
        );
        assert!(!sb.cwd().join(name).exists(), "{name} was created");
    }
}

#[test]
fn sh_scaffold_runs_at_once_and_passes_its_test() {
    scaffold_works("sh", "hish", "main.sh");
}

#[test]
fn sh_scaffold_echoes_tool_args_and_command_args_verbatim() {
    // The sh scaffold handles JSON with sed: quotes and backslashes in the
    // arguments must survive both ways.
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["ext", "new", "q", "--lang", "sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = zut(&sb)
        .args(["--ext", "q", "-p", r#"/q say "hi" \o/"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"hello, say "hi" \o/ from q"#,
        "{}",
        text(&out)
    );
}

#[test]
fn rust_scaffold_is_a_standalone_cargo_project_with_the_sdk_vendored() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["ext", "new", "rusty", "--lang", "rust", "--dir", "sub"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = sb.cwd().join("sub/rusty");
    for f in [
        "extension.json",
        "README.md",
        "test.sh",
        "Cargo.toml",
        "src/main.rs",
        "zut-ext/Cargo.toml",
        "zut-ext/src/lib.rs",
        "zut-ext/src/sdk.rs",
        "zut-ext/src/wire.rs",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    // Every module of the SDK is vendored (a missing one would not build).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/rust/src");
    for entry in std::fs::read_dir(&src).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            dir.join("zut-ext/src").join(&name).is_file(),
            "zut-ext/src/{} not vendored",
            name.to_string_lossy()
        );
    }
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("extension.json")).unwrap()).unwrap();
    assert_eq!(m["exec"], "./target/release/rusty");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("cargo build --release"), "{readme}");
    // The vendored SDK is the one zut was built with.
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/rust/src/wire.rs");
    assert_eq!(
        std::fs::read(dir.join("zut-ext/src/wire.rs")).unwrap(),
        std::fs::read(ours).unwrap()
    );
    // cargo resolves it as a project of its own: the vendored SDK is a
    // path dependency and nothing refers to zut's workspace.
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(dir.join("Cargo.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = meta["workspace_root"].as_str().unwrap();
    assert_eq!(
        Path::new(root).canonicalize().unwrap(),
        dir.canonicalize().unwrap()
    );
    let names: Vec<&str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for want in ["rusty", "zut-ext", "serde", "serde_json"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    // Before a build, the test says what is missing.
    let (code, checks, all) = ext_test(&sb, &dir);
    assert_eq!(code, Some(1), "{all}");
    let start = checks.iter().find(|c| c.check == "start").unwrap();
    assert!(
        start.status == "FAIL" && start.reason.contains("target/release/rusty"),
        "{all}"
    );

    // The README's build command (offline: the cargo cache that built zut
    // holds serde and serde_json), then the same checks as every scaffold.
    let out = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(&dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    runs_and_passes(&sb, &dir, "rusty", "rust");
}

#[test]
fn new_refuses_a_non_empty_directory_bad_names_and_unknown_languages() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.cwd().join("taken")).unwrap();
    std::fs::write(sb.cwd().join("taken/keep.txt"), "mine").unwrap();
    let out = zut(&sb).args(["ext", "new", "taken"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not empty"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_dir(sb.cwd().join("taken")).unwrap().count(),
        1
    );

    // An empty directory is fine.
    std::fs::create_dir_all(sb.cwd().join("empty")).unwrap();
    let out = zut(&sb)
        .args(["ext", "new", "empty", "--lang", "sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(sb.cwd().join("empty/main.sh").is_file());

    for (args, want) in [
        (&["ext", "new", "two words"][..], "A-Z a-z 0-9"),
        (&["ext", "new", ".hidden"][..], "plain name"),
        (&["ext", "new", "clear"][..], "built-in"),
        (
            &["ext", "new", "x", "--lang", "cobol"][..],
            "unknown language",
        ),
    ] {
        let out = zut(&sb).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out)
        );
    }
    // Nothing half written was left behind.
    let stray: Vec<_> = std::fs::read_dir(sb.cwd())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".zut-ext-new-"))
        .collect();
    assert!(stray.is_empty());
}

/// The package name in a Cargo.toml, for finding a built example.
fn package_name(cargo_toml: &Path) -> Option<String> {
    let text = std::fs::read_to_string(cargo_toml).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("name = "))
        .map(|v| v.trim_matches('"').to_string())
}

#[test]
fn every_example_passes() {
    let sb = Sandbox::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions");
    let mut tested = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("extension.json").is_file())
        .collect();
    entries.sort();
    for dir in entries {
        if let Some(package) = package_name(&dir.join("Cargo.toml")) {
            build_example(&package);
        }
        assert_passes(&sb, &dir);
        tested.push(dir.file_name().unwrap().to_string_lossy().into_owned());
    }
    for want in [
        "hello-py",
        "clock-node",
        "guard-sh",
        "rust-echo",
        "todo",
        "tasked-phases",
        "approve",
        "secret",
    ] {
        assert!(
            tested.iter().any(|t| t == want),
            "{want} not tested: {tested:?}"
        );
    }
}

/// Runs `zut ext test` on fixture `name`; asserts exit 1 and that check
/// `check` failed with a reason containing `why`.
fn fails(name: &str, check: &str, why: &str) -> Vec<Check> {
    let sb = Sandbox::new();
    let dir = support::fixtures().join(name);
    let (code, checks, all) = ext_test(&sb, &dir);
    assert_eq!(code, Some(1), "{name}: {all}");
    assert!(
        checks
            .iter()
            .any(|c| c.check == check && c.status == "FAIL" && c.reason.contains(why)),
        "{name}: no FAIL {check} with {why:?}: {all}"
    );
    checks
}

#[test]
fn the_baseline_fixture_passes() {
    let sb = Sandbox::new();
    assert_passes(&sb, &support::fixtures().join("et-good"));
}

#[test]
fn no_hello_fails_at_the_hello_deadline() {
    let sb = Sandbox::new();
    let dir = sb.fixture("fx-no-hello", &[]);
    let out = zut(&sb)
        .env("ZUT_HELLO_TIMEOUT_MS", "300")
        .args(["ext", "test"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FAIL hello: no line on stdout within 300 ms"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checks failed"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_early_exit_reports_status_and_stderr() {
    let sb = Sandbox::new();
    let dir = sb.fixture("fx-exit-3", &[]);
    let (code, checks, all) = ext_test(&sb, &dir);
    assert_eq!(code, Some(1), "{all}");
    let hello = checks.iter().find(|c| c.check == "hello").unwrap();
    assert!(
        hello.status == "FAIL"
            && hello.reason.contains("exit status 3")
            && hello.reason.contains("giving up before hello"),
        "{all}"
    );
}

#[test]
fn wrong_protocol_and_wrong_name_fail_hello() {
    let sb = Sandbox::new();
    let dir = sb.fixture("fx-wrong-protocol", &[]);
    let (_, checks, all) = ext_test(&sb, &dir);
    assert!(
        checks.iter().any(|c| c.check == "hello"
            && c.status == "FAIL"
            && c.reason.contains("protocol_version is 1")),
        "{all}"
    );
    let dir = sb.fixture("fx-wrong-name", &[]);
    let (_, checks, all) = ext_test(&sb, &dir);
    assert!(
        checks.iter().any(|c| c.check == "hello"
            && c.status == "FAIL"
            && c.reason.contains("\"someone-else\"")),
        "{all}"
    );
}

#[test]
fn a_frame_before_hello_fails() {
    fails(
        "fx-frame-before-hello",
        "hello",
        "the first frame is notify",
    );
}

#[test]
fn garbage_on_stdout_warns_with_the_line_as_zut_skips_it() {
    let sb = Sandbox::new();
    let (code, checks, all) = ext_test(&sb, &support::fixtures().join("et-garbage"));
    assert_eq!(
        code,
        Some(0),
        "zut keeps such an extension connected: {all}"
    );
    let c = checks
        .iter()
        .find(|c| c.check == "stdout" && c.status == "WARN")
        .unwrap_or_else(|| panic!("no stdout warning: {all}"));
    assert!(
        c.reason.contains("not a JSON object")
            && c.reason.contains("(3 lines)")
            && c.reason.contains("Loading et..."),
        "{all}"
    );
    assert!(
        !checks
            .iter()
            .any(|c| c.check == "stdout" && c.status == "PASS"),
        "no vacuous PASS next to the warning: {all}"
    );
}

#[test]
fn a_banner_before_hello_is_a_warning_not_a_failure() {
    let sb = Sandbox::new();
    let (code, checks, all) = ext_test(&sb, &support::fixtures().join("et-banner"));
    assert_eq!(code, Some(0), "{all}");
    assert!(
        checks
            .iter()
            .any(|c| c.check == "hello" && c.status == "PASS"),
        "{all}"
    );
    assert!(
        checks.iter().any(|c| c.check == "stdout"
            && c.status == "WARN"
            && c.reason.contains("et starting up")),
        "{all}"
    );
    assert!(
        !checks
            .iter()
            .any(|c| c.check == "stdout" && c.status == "PASS"),
        "{all}"
    );
}

#[test]
fn the_stdout_pass_counts_the_lines_it_judged() {
    let sb = Sandbox::new();
    let checks = assert_passes(&sb, &support::fixtures().join("et-good"));
    let c = checks.iter().find(|c| c.check == "stdout").unwrap();
    assert!(
        c.reason.starts_with("all ") && c.reason.ends_with(" were frames"),
        "{checks:?}"
    );
}

#[test]
fn progress_for_the_called_tool_passes_and_is_counted() {
    let sb = Sandbox::new();
    let checks = assert_passes(&sb, &support::fixtures().join("et-progress"));
    assert!(
        checks.iter().any(|c| c.check == "tool et_echo"
            && c.status == "PASS"
            && c.reason.contains("after 2 tool_progress frames")),
        "{checks:?}"
    );
}

#[test]
fn progress_naming_another_id_or_malformed_fails() {
    let checks = fails(
        "et-progress-bad-id",
        "tool progress",
        "2 tool_progress frames named no running call (not-zut-ext-test-",
    );
    assert!(
        checks.iter().any(|c| c.check == "stdout"
            && c.status == "FAIL"
            && c.reason.contains("a malformed frame")
            && c.reason.contains("\"half\"")),
        "{checks:?}"
    );
}

#[test]
fn progress_keeps_a_slow_call_alive_past_the_tool_timeout() {
    let sb = Sandbox::new();
    let dir = support::fixtures().join("et-slow-progress");
    let (code, checks, all) = ext_test_env(&sb, &dir, &[("ZUT_TOOL_TIMEOUT_MS", "400")]);
    assert_eq!(code, Some(0), "{all}");
    assert!(
        checks.iter().any(|c| c.check == "tool et_echo"
            && c.status == "PASS"
            && c.reason.contains("after 5 tool_progress frames")),
        "{all}"
    );
    // Without progress, the same wait fails at the deadline.
    let (code, _, all) = ext_test_env(
        &sb,
        &support::fixtures().join("et-hang-tool"),
        &[("ZUT_TOOL_TIMEOUT_MS", "400")],
    );
    assert_eq!(code, Some(1), "{all}");
}

#[test]
fn every_subscribed_intercept_and_event_is_sent_and_answered() {
    let sb = Sandbox::new();
    let checks = assert_passes(&sb, &support::fixtures().join("et-intercepts"));
    for kind in [
        "tool_call",
        "turn_start",
        "assistant_message",
        "user_message",
        "tool_result",
        "agent_end",
    ] {
        assert!(
            checks
                .iter()
                .any(|c| c.check == format!("intercept {kind}") && c.status == "PASS"),
            "{kind}: {checks:?}"
        );
    }
    let events = checks.iter().find(|c| c.check == "events").unwrap();
    assert!(
        events.status == "PASS"
            && events
                .reason
                .contains("sent turn_start, session_opened, tool_result"),
        "{checks:?}"
    );
    assert!(
        !checks
            .iter()
            .any(|c| c.check == "registrations" && c.status != "PASS"),
        "the added intercepts are known: {checks:?}"
    );
}

#[test]
fn an_intercept_not_answered_in_time_fails() {
    let sb = Sandbox::new();
    let dir = support::fixtures().join("et-deaf-intercept");
    let (code, checks, all) = ext_test_env(&sb, &dir, &[("ZUT_INTERCEPT_TIMEOUT_MS", "300")]);
    assert_eq!(code, Some(1), "{all}");
    assert!(
        checks.iter().any(|c| c.check == "intercept tool_call"
            && c.status == "FAIL"
            && c.reason
                .contains("no event_intercept_response within 300 ms")),
        "{all}"
    );
}

#[test]
fn late_registrations_warn_only_when_zut_would_refuse_them() {
    let sb = Sandbox::new();
    let (code, checks, all) = ext_test(&sb, &support::fixtures().join("et-late"));
    assert_eq!(code, Some(0), "{all}");
    let warns: Vec<&Check> = checks
        .iter()
        .filter(|c| c.check == "late registration" && c.status == "WARN")
        .collect();
    assert!(
        warns.len() == 1 && warns[0].reason.contains("tool read refused"),
        "{all}"
    );
    assert!(
        checks.iter().any(|c| c.check == "late registration"
            && c.status == "PASS"
            && c.reason.contains("et_later, unregister et_later")),
        "{all}"
    );
    assert!(
        !checks
            .iter()
            .any(|c| c.check == "stdout" && c.status != "PASS"),
        "unregister_tool is a known frame: {all}"
    );
}

#[test]
fn a_crash_during_a_tool_call_fails_the_call_and_the_exit() {
    let checks = fails(
        "et-crash-tool",
        "tool et_crash",
        "went away during the call",
    );
    let exit = checks.iter().find(|c| c.check == "exit").unwrap();
    assert!(
        exit.status == "FAIL"
            && exit.reason.contains("exit status 9")
            && exit.reason.contains("tool et_crash")
            && exit.reason.contains("crashing on purpose"),
        "{checks:?}"
    );
}

#[test]
fn a_tool_that_never_answers_fails_at_the_tool_deadline() {
    fails(
        "et-hang-tool",
        "tool et_hang",
        "no tool_result within 3000 ms",
    );
}

#[test]
fn never_ready_is_a_warning_as_zut_auto_readies() {
    let sb = Sandbox::new();
    let (code, checks, all) = ext_test(&sb, &support::fixtures().join("et-no-ready"));
    assert_eq!(code, Some(0), "{all}");
    assert!(
        checks.iter().any(|c| c.check == "ready"
            && c.status == "WARN"
            && c.reason.contains("no ready frame within 1500 ms")),
        "{all}"
    );
}

#[test]
fn reserved_names_and_bad_schemas_fail_registration() {
    let checks = fails("et-bad-register", "registrations", "tool read refused");
    assert!(
        checks.iter().any(|c| c.check == "registrations"
            && c.status == "FAIL"
            && c.reason.contains("schema must be a JSON object")),
        "{checks:?}"
    );
}

#[test]
fn dying_on_an_unknown_host_frame_fails() {
    let checks = fails("et-die-on-unknown", "unknown frame", "not tolerated");
    assert!(
        checks
            .iter()
            .any(|c| c.check == "exit" && c.status == "FAIL" && c.reason.contains("exit status 4")),
        "{checks:?}"
    );
}

#[test]
fn ignoring_shutdown_fails_and_the_holdout_is_killed() {
    let checks = fails("et-no-ack", "shutdown", "no shutdown_ack within 1500 ms");
    assert!(
        checks
            .iter()
            .any(|c| c.check == "exit" && c.status == "FAIL" && c.reason.contains("still running")),
        "{checks:?}"
    );
}

#[test]
fn text_output_is_one_line_per_check() {
    let sb = Sandbox::new();
    let out = zut(&sb)
        .args(["ext", "test"])
        .arg(support::fixtures().join("et-good"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let (status, rest) = line.split_once(' ').unwrap();
        assert!(["PASS", "WARN", "FAIL"].contains(&status), "{line}");
        assert!(rest.contains(": "), "{line}");
    }
    assert!(
        stdout.starts_with("PASS manifest: name et-good"),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checks passed"),
        "{}",
        text(&out)
    );
    // Usage errors exit 2.
    let out = zut(&sb).args(["ext", "test"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
