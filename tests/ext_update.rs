//! `zut ext update` end to end: real git repositories made by the test,
//! installed from a `file://` URL by the real `zut` binary, then changed,
//! broken and updated; the installed extension is started (`zut ext
//! doctor`) to see which version's code runs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn have_git() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A Python extension speaking the protocol directly: it registers the
/// tool `greet_<tag>`, so what `doctor` reports shows which code ran.
fn greeter(tag: &str) -> String {
    format!(
        r#"import json, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
emit({{"type": "hello", "protocol_version": 2, "name": "greeter", "version": "{tag}", "capabilities": ["tools"]}})
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "hello_ack":
        emit({{"type": "register_tool", "name": "greet_{tag}", "description": "greets ({tag})", "schema": {{"type": "object"}}}})
        emit({{"type": "ready"}})
    elif m["type"] == "shutdown":
        emit({{"type": "shutdown_ack"}})
        break
"#
    )
}

fn manifest(version: &str, exec: &str) -> String {
    format!(
        r#"{{"name": "greeter", "version": "{version}", "exec": "{exec}", "args": ["main.py"], "description": "test greeter"}}"#
    )
}

/// Commits `files` to the repository at `repo`; returns the commit.
fn commit(repo: &Path, files: &[(&str, &str)], message: &str) -> String {
    for (name, text) in files {
        std::fs::write(repo.join(name), text).unwrap();
    }
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", message]);
    git(repo, &["rev-parse", "HEAD"])
}

fn ext(sb: &Sandbox, args: &[&str]) -> Output {
    let out = zut(sb).arg("ext").args(args).output().unwrap();
    eprintln!(
        "zut ext {args:?} -> {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The tools the installed `greeter` registers when zut starts it.
fn tools(sb: &Sandbox) -> Vec<String> {
    let out = ext(sb, &["doctor", "--json", "greeter"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["extensions"].as_array().cloned().unwrap_or_default();
    rows.iter()
        .filter(|r| r["name"] == "greeter")
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .map(|t| t.as_str().unwrap_or_default().to_string())
        .collect()
}

/// `(state, version)` of `greeter` in `zut ext list --json`.
fn listed(sb: &Sandbox) -> (String, String) {
    let out = ext(sb, &["list", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let r = rows.iter().find(|r| r["name"] == "greeter").unwrap();
    (
        r["state"].as_str().unwrap().to_string(),
        r["version"].as_str().unwrap().to_string(),
    )
}

/// Hidden leftovers (staging, aside) in `$ZUT_HOME/extensions`.
fn leftovers(sb: &Sandbox) -> Vec<String> {
    std::fs::read_dir(sb.home().join("extensions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn installed_dir(sb: &Sandbox) -> PathBuf {
    sb.home().join("extensions/greeter")
}

#[test]
fn update_follows_the_repository_and_a_broken_version_changes_nothing() {
    if !have_git() {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let sb = Sandbox::new();
    let repo = sb.path("greeter-repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let v1 = commit(
        &repo,
        &[
            ("extension.json", &manifest("1.0.0", "python3")),
            ("main.py", &greeter("v1")),
        ],
        "v1",
    );
    let url = format!("file://{}", repo.display());
    assert_eq!(ext(&sb, &["install", &url]).status.code(), Some(0));
    assert_eq!(tools(&sb), ["greet_v1"]);

    let out = ext(&sb, &["update", "greeter"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        err(&out).contains(&format!("greeter is already up to date ({})", &v1[..12])),
        "{}",
        err(&out)
    );

    // Disabling records the choice outside the clone: git sees no change.
    assert_eq!(ext(&sb, &["disable", "greeter"]).status.code(), Some(0));
    assert_eq!(git(&installed_dir(&sb), &["status", "--porcelain"]), "");
    assert_eq!(listed(&sb).0, "disabled");

    let v2 = commit(
        &repo,
        &[
            ("extension.json", &manifest("2.0.0", "python3")),
            ("main.py", &greeter("v2")),
        ],
        "v2",
    );
    let out = ext(&sb, &["update", "greeter"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(
        err(&out).contains(&format!(
            "updated greeter: {} -> {}, version 1.0.0 -> 2.0.0",
            &v1[..12],
            &v2[..12]
        )),
        "{}",
        err(&out)
    );
    assert!(err(&out).contains("updating greeter from"), "progress");
    assert_eq!(
        listed(&sb),
        ("disabled".into(), "2.0.0".into()),
        "still disabled"
    );
    assert_eq!(git(&installed_dir(&sb), &["status", "--porcelain"]), "");
    assert_eq!(ext(&sb, &["enable", "greeter"]).status.code(), Some(0));
    assert_eq!(git(&installed_dir(&sb), &["status", "--porcelain"]), "");
    assert_eq!(tools(&sb), ["greet_v2"], "the new code runs");

    // v3 points exec at a program that is not there: refused, v2 stays.
    commit(
        &repo,
        &[("extension.json", &manifest("3.0.0", "./missing"))],
        "v3",
    );
    let out = ext(&sb, &["update", "greeter"]);
    assert_eq!(out.status.code(), Some(1), "{}", err(&out));
    let e = err(&out);
    assert!(
        e.contains("greeter: the check of the new version failed, the installed copy is unchanged")
            && e.contains("\"./missing\""),
        "{e}"
    );
    assert_eq!(listed(&sb), ("enabled".into(), "2.0.0".into()));
    assert_eq!(git(&installed_dir(&sb), &["rev-parse", "HEAD"]), v2);
    assert_eq!(tools(&sb), ["greet_v2"], "the old code still runs");
    assert_eq!(leftovers(&sb), Vec::<String>::new());

    // A v4 that renames the extension is refused too.
    commit(
        &repo,
        &[(
            "extension.json",
            &manifest("4.0.0", "python3").replace("\"greeter\"", "\"renamed\""),
        )],
        "v4",
    );
    let out = ext(&sb, &["update"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains("names the extension \"renamed\""),
        "{}",
        err(&out)
    );
    assert_eq!(git(&installed_dir(&sb), &["rev-parse", "HEAD"]), v2);

    // The repository gone: the clone fails, named as such.
    std::fs::rename(&repo, sb.path("moved")).unwrap();
    let out = ext(&sb, &["update", "greeter"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains("greeter: the clone failed, the installed copy is unchanged"),
        "{}",
        err(&out)
    );
    assert_eq!(tools(&sb), ["greet_v2"]);
    assert_eq!(leftovers(&sb), Vec::<String>::new());
}

/// A Rust extension whose binary prints `tag`; `broken` does not compile.
fn crate_files(tag: &str, broken: bool) -> Vec<(&'static str, String)> {
    let body = if broken {
        "fn main() { let x: u32 = \"no\"; }\n".to_string()
    } else {
        format!("fn main() {{ println!(\"{tag}\"); }}\n")
    };
    vec![
        (
            "extension.json",
            r#"{"name": "built", "version": "1.0.0", "exec": "./bin/built"}"#.to_string(),
        ),
        (
            "Cargo.toml",
            "[package]\nname = \"built\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"
                .to_string(),
        ),
        ("src/main.rs", body),
        (".gitignore", "/target\n/Cargo.lock\n/bin\n".to_string()),
    ]
}

fn commit_crate(repo: &Path, tag: &str, broken: bool) {
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let files = crate_files(tag, broken);
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    commit(repo, &refs, tag);
}

fn run_built(sb: &Sandbox) -> String {
    let out = Command::new(sb.home().join("extensions/built/bin/built"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn update_reruns_the_recorded_build_and_a_failed_build_changes_nothing() {
    if !have_git() {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let sb = Sandbox::new();
    let repo = sb.path("built");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    commit_crate(&repo, "one", false);
    let url = format!("file://{}", repo.display());
    let out = ext(&sb, &["install", "--build=cargo", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert_eq!(run_built(&sb), "one");

    commit_crate(&repo, "two", false);
    let out = ext(&sb, &["update", "built"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(
        err(&out).contains("building built with cargo"),
        "{}",
        err(&out)
    );
    assert_eq!(run_built(&sb), "two", "rebuilt from the new commit");

    commit_crate(&repo, "three", true);
    let out = ext(&sb, &["update", "built"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains("built: the build failed, the installed copy is unchanged"),
        "{}",
        err(&out)
    );
    assert_eq!(run_built(&sb), "two", "the old binary stays");
    assert_eq!(
        std::fs::read_dir(sb.home().join("extensions"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        ["built"],
        "no staging or build directory left"
    );
}

#[test]
fn what_cannot_be_updated_says_why() {
    if !have_git() {
        eprintln!("SKIPPED: git is not installed");
        return;
    }
    let sb = Sandbox::new();
    let out = ext(&sb, &["update"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(err(&out).contains("nothing to update"), "{}", err(&out));

    // From a local directory: reinstall it, says how.
    let src = sb.path("src/hello");
    hello_source(&src);
    assert_eq!(
        ext(&sb, &["install", src.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let out = ext(&sb, &["update", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains(&format!(
            "hello was installed from the local directory {0}, which zut does not track; reinstall it with zut ext install --force {0}",
            src.display()
        )),
        "{}",
        err(&out)
    );
    // Without names, local installs are not candidates.
    let out = ext(&sb, &["update"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(err(&out).contains("nothing to update"), "{}", err(&out));

    // An unknown name gets a suggestion.
    let out = ext(&sb, &["update", "helo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains("did you mean \"hello\""),
        "{}",
        err(&out)
    );
    let out = ext(&sb, &["updat"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err(&out).contains("did you mean \"update\""),
        "{}",
        err(&out)
    );

    // A clone placed by hand (or by an older zut): no record to follow.
    let by_hand = sb.home().join("extensions/manual");
    hello_source(&by_hand);
    std::fs::write(
        by_hand.join("extension.json"),
        r#"{"name":"manual","exec":"./run"}"#,
    )
    .unwrap();
    git(&by_hand, &["init", "-q"]);
    let out = ext(&sb, &["update", "manual"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains(
            "manual cannot be updated: it is a git clone, but zut has no record of its URL"
        ),
        "{}",
        err(&out)
    );
    // ...and without names it is named, not skipped silently.
    let out = ext(&sb, &["update"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains("manual cannot be updated"),
        "{}",
        err(&out)
    );

    // Removing forgets the record: a reinstall from git can then update.
    assert_eq!(ext(&sb, &["remove", "hello"]).status.code(), Some(0));
    assert!(!sb.home().join("installs/hello.json").exists());

    // --help documents it.
    let out = ext(&sb, &["update", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("installed from a git URL"),
        "{out:?}"
    );
}
