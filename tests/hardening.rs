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
