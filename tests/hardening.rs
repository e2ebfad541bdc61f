//! What must hold when zut is treated badly: killed outright, handed huge
//! or odd files to install, a skill that is not a regular file.

mod support;

use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use support::*;

/// The pids whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .ok()
                .as_deref()
                == Some(&want[..])
        })
        .filter(|pid| !is_zombie(*pid))
        .collect()
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_none_or(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[cfg(target_os = "linux")]
#[test]
fn a_bash_tool_child_dies_with_a_killed_zut() {
    let sb = Sandbox::new();
    // A duration no other process on the machine runs with.
    let nap = format!("{}.{}", 290 + std::process::id() % 9, std::process::id());
    let s = script(
        &sb,
        &[
            json!({"tool_calls": [{"id": "s", "name": "bash", "args": {"command": format!("sleep {nap}"), "timeout": 600}}]}),
            json!({"text": "done"}),
        ],
    );
    let mut zut = zut(&sb)
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--yolo",
            "--no-session",
            "-p",
            "x",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let argv = ["sleep", nap.as_str()];
    let started = eventually(Duration::from_secs(20), || {
        !processes_running(&argv).is_empty()
    });
    let sleeps = processes_running(&argv);
    zut.kill().unwrap();
    zut.wait().unwrap();
    assert!(started, "the bash tool never started `sleep {nap}`");
    let gone = eventually(Duration::from_secs(3), || {
        processes_running(&argv).is_empty()
    });
    for pid in processes_running(&argv) {
        // SAFETY: ending the stray sleep this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(gone, "`sleep {nap}` ({sleeps:?}) outlived a kill -9 of zut");
}

/// Runs `zut ext install SRC` (with `ZUT_INSTALL_MAX_MIB` set to
/// `max_mib` if given), asserts its exit code is `code`, returns stderr.
fn install(sb: &Sandbox, src: &std::path::Path, max_mib: Option<&str>, code: i32) -> String {
    let mut cmd = zut(sb);
    if let Some(mib) = max_mib {
        cmd.env("ZUT_INSTALL_MAX_MIB", mib);
    }
    let out = cmd.args(["ext", "install"]).arg(src).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{}: {err}", src.display());
    err
}

#[test]
fn installing_a_sparse_gigabyte_is_refused_before_writing_it() {
    let sb = Sandbox::new();
    let src = sb.path("src");
    hello_source(&src);
    let big = src.join("data/huge.bin");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let err = install(&sb, &src, None, 1);
    assert!(
        err.contains(&big.display().to_string()),
        "names the file: {err}"
    );
    assert!(
        err.contains("1024.0 MiB") && err.contains("100.0 MiB"),
        "sizes: {err}"
    );
    assert!(
        err.contains("ZUT_INSTALL_MAX_MIB"),
        "says how to raise it: {err}"
    );
    assert_eq!(installed(&sb), Vec::<String>::new(), "no staging left");

    // The cap counts every file, and the environment moves it.
    std::fs::remove_file(&big).unwrap();
    for name in ["a.bin", "b.bin"] {
        std::fs::write(src.join("data").join(name), vec![7u8; 600 << 10]).unwrap();
    }
    let err = install(&sb, &src, Some("1"), 1);
    assert!(
        err.contains("b.bin") && err.contains("after 0.6 MiB of other files"),
        "{err}"
    );
    install(&sb, &src, Some("2"), 0);
    assert_eq!(installed(&sb), ["hello"]);
}

#[test]
fn a_fifo_skill_file_is_named_in_a_warning() {
    let sb = Sandbox::new();
    let skills = sb.home().join("skills");
    std::fs::create_dir_all(skills.join("fine")).unwrap();
    std::fs::write(
        skills.join("fine/SKILL.md"),
        "---\ndescription: Works\n---\nbody\n",
    )
    .unwrap();
    std::fs::create_dir_all(skills.join("piped")).unwrap();
    let fifo = skills.join("piped/SKILL.md");
    mkfifo(&fifo);
    let s = script(&sb, &[json!({"text": "ok"})]);
    let mut cmd = zut(&sb);
    cmd.args([
        "--provider",
        "script",
        "--script",
        &s,
        "--no-session",
        "-p",
        "hi",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let finished = eventually(Duration::from_secs(20), || {
        child.try_wait().unwrap().is_some()
    });
    if !finished {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(finished, "zut blocked on a FIFO SKILL.md");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&fifo.display().to_string()) && err.contains("FIFO"),
        "{err}"
    );
    let list = zut(&sb).args(["skills"]).output().unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("fine") && !listed.contains("piped"),
        "{listed}"
    );
}

#[test]
fn installed_python_sdk_examples_import_the_sdk_in_a_clean_environment() {
    let sb = Sandbox::new();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions");
    for name in ["approve", "keep-safe"] {
        install(&sb, &examples.join(name), None, 0);
    }
    let s = script(&sb, &[json!({"text": "ok"})]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zut"))
        .env_clear()
        .env("PATH", search_path())
        .env("ZUT_HOME", sb.home())
        .current_dir(sb.cwd())
        .stdin(Stdio::null())
        .args([
            "--provider",
            "script",
            "--script",
            &s,
            "--no-session",
            "--mode",
            "json",
            "hi",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let loaded: Vec<String> = json_lines(&out.stdout)
        .into_iter()
        .filter(|e| e["type"] == "ext_loaded")
        .map(|e| e["extension"].as_str().unwrap_or_default().to_string())
        .collect();
    for name in ["approve", "keep-safe"] {
        assert!(
            loaded.iter().any(|l| l == name),
            "{name} not loaded: {loaded:?}\n{err}"
        );
    }
    // What they imported is this build's SDK.
    let sdk = sb.home().join("sdk/python/zut_ext/__init__.py");
    let ours =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/python/zut_ext/__init__.py");
    assert_eq!(std::fs::read(sdk).unwrap(), std::fs::read(ours).unwrap());
}
