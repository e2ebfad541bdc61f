//! The one table of built-in commands, seen from outside: `/help` and the
//! "available" list offer in each mode exactly what runs there, an
//! extension cannot take a built-in's name, and a built-in of another mode
//! is refused with where it works.

mod support;

use support::*;
use zut::commands::{self, Mode};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `zut -p LINE` with the scripted provider (which is never asked).
fn print(sb: &Sandbox, exts: &[std::path::PathBuf], line: &str) -> std::process::Output {
    let (out, requests) = run_scripted(sb, exts, &[], &["--no-session", "-p", line]);
    assert!(requests.is_empty(), "{line} asked the model: {requests:?}");
    out
}

#[test]
fn print_mode_help_lists_the_commands_that_run_there() {
    let sb = Sandbox::new();
    let normal = sb.fixture("fx-normal", &[]);
    let out = print(&sb, &[normal], "/help");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for b in commands::BUILTINS {
        let listed = stdout
            .lines()
            .any(|l| l.starts_with(&format!("/{} ", b.name)));
        assert_eq!(listed, b.works_in(Mode::Print), "/{}:\n{stdout}", b.name);
    }
    assert!(
        stdout.contains("/echo") && stdout.contains("[fx-normal]"),
        "{stdout}"
    );
    assert!(stdout.contains("/skill:NAME"), "{stdout}");
}

#[test]
fn every_command_print_mode_offers_runs_there() {
    let sb = Sandbox::new();
    let out = print(&sb, &[], "/nope");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let offered = stderr
        .split("available: ")
        .nth(1)
        .and_then(|s| s.split(". ").next())
        .unwrap_or_else(|| panic!("no list in {stderr}"));
    for name in offered.split(", ") {
        let b = commands::find(name.trim_start_matches('/')).expect(name);
        assert!(b.works_in(Mode::Print), "{name} offered in -p");
    }
    assert!(offered.contains("/model"), "{offered}");
    // `/model` runs: without a name it says which model is in use.
    let out = print(&sb, &[], "/model");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("model: "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_terminal_command_in_print_mode_says_where_it_works() {
    let sb = Sandbox::new();
    for line in ["/tree", "/ext", "/QUIT", "/exit"] {
        let out = print(&sb, &[], line);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{line}: {stderr}");
        assert!(
            stderr.contains("works only in the interactive terminal"),
            "{line}: {stderr}"
        );
    }
    // `/cd` is no built-in: it is an unknown command like any other.
    let stderr = text(&print(&sb, &[], "/cd").stderr);
    assert!(stderr.contains("unknown command /cd"), "{stderr}");
}

#[test]
fn an_extension_cannot_take_a_built_in_name_in_any_mode() {
    let sb = Sandbox::new();
    let ext = sb.fixture("fx-reserved", &[]);
    let out = print(&sb, std::slice::from_ref(&ext), "/help");
    let stderr = text(&out.stderr);
    for name in ["switch", "ext", "Model", "skill:deploy"] {
        assert!(
            stderr.contains(&format!(
                "command /{name} refused: it is a built-in zut command"
            )),
            "{name}: {stderr}"
        );
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("[fx-reserved]"), "{stdout}");
    assert!(!stdout.contains("taken by zut"), "{stdout}");
    // `/switch` is zut's, never the extension's.
    let stderr = text(&print(&sb, &[ext], "/switch").stderr);
    assert!(stderr.contains("/switch needs a session id"), "{stderr}");
}
