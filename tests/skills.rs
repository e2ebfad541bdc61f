//! Skills through the real `zut` binary with the scripted provider: what the
//! model is sent (`--script-log`) is the ground truth for precedence,
//! exposure, the `skill` tool, `/skill:` expansion, `--no-skills`, and for
//! the guarantee that a manifest can never make zut read a file outside
//! its extension directory.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use support::*;

/// Text that lives only outside every extension directory.
const MARKER: &str = "OUTSIDE-MARKER-5d1c";

/// The sandbox's stand-in for the user's home directory.
fn user_home(sb: &Sandbox) -> PathBuf {
    sb.path("userhome")
}

fn skill_md(name: Option<&str>, description: &str, extra: &str) -> String {
    let name = name.map(|n| format!("name: {n}\n")).unwrap_or_default();
    format!(
        "---\n{name}description: {description}\n{extra}---\n\nBody of the {description} skill.\n"
    )
}

/// Writes `<dir>/SKILL.md`.
fn put_skill(dir: &Path, name: Option<&str>, description: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_md(name, description, "")).unwrap();
}

/// A theme-only extension (no process) bundling `skills` entries.
fn theme_ext(sb: &Sandbox, name: &str, skills: &[&str]) -> PathBuf {
    let dir = sb.path("exts").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("theme.json"), "{}").unwrap();
    std::fs::write(
        dir.join("extension.json"),
        json!({"name": name, "version": "1.0.0", "skills": skills}).to_string(),
    )
    .unwrap();
    dir
}

/// Runs zut with the sandbox's home, these extensions and script.
fn run(sb: &Sandbox, exts: &[PathBuf], lines: &[Value], extra: &[&str]) -> (Output, Vec<Value>) {
    let s = script(sb, lines);
    let log = sb.path("requests.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut c = zut(sb);
    c.env("HOME", user_home(sb));
    for e in exts {
        c.arg("-e").arg(e);
    }
    let out = c
        .args(["--provider", "script", "--script", &s, "--script-log"])
        .arg(&log)
        .args(extra)
        .output()
        .unwrap();
    let raw = std::fs::read(&log).unwrap_or_default();
    (out, json_lines(&raw))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn system(req: &Value) -> String {
    req["system"].as_str().unwrap_or_default().to_string()
}

/// The text of the first user message of a request.
fn first_user_text(req: &Value) -> String {
    req["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The text of the tool result in the last message of a request.
fn last_tool_result(req: &Value) -> (bool, String) {
    let msgs = req["messages"].as_array().unwrap();
    let block = &msgs[msgs.len() - 1]["content"][0];
    assert_eq!(block["type"], "tool_result", "{req}");
    (
        block["is_error"].as_bool().unwrap(),
        block["content"][0]["text"].as_str().unwrap().to_string(),
    )
}

/// The skill lines of a system prompt: everything after the line that
/// mentions skills, up to the first blank line.
fn skill_lines(system: &str) -> Vec<String> {
    let mut lines = system.lines();
    let Some(_) = lines.by_ref().find(|l| l.starts_with("Skills")) else {
        return Vec::new();
    };
    lines
        .take_while(|l| l.starts_with("- "))
        .map(str::to_string)
        .collect()
}

#[test]
fn precedence_across_every_root_then_extensions() {
    let sb = Sandbox::new();
    let (cwd, home, zh) = (sb.cwd(), user_home(&sb), sb.home());
    let roots = [
        cwd.join(".zut/skills"),
        zh.join("skills"),
        cwd.join(".claude/skills"),
        home.join(".claude/skills"),
        cwd.join(".agents/skills"),
        home.join(".agents/skills"),
    ];
    // Skill rK exists in root K and every later source, so it must come
    // from root K; r7 exists only in the extensions (first one wins).
    for (k, root) in roots.iter().enumerate() {
        for name in 1..=k + 1 {
            put_skill(
                &root.join(format!("r{name}")),
                None,
                &format!("root{}", k + 1),
            );
        }
    }
    put_skill(
        &home.join(".agents/skills/group/inner/nested"),
        None,
        "deep",
    );
    let a = theme_ext(&sb, "ext-a", &["skills"]);
    let b = theme_ext(&sb, "ext-b", &["skills"]);
    for (dir, tag) in [(&a, "ext-a"), (&b, "ext-b")] {
        for name in 1..=7 {
            put_skill(&dir.join(format!("skills/r{name}")), None, tag);
        }
    }
    let (out, reqs) = run(&sb, &[a, b], &[json!({"text": "ok"})], &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = skill_lines(&system(&reqs[0]));
    assert_eq!(
        lines,
        [
            "- r1: root1",
            "- r2: root2",
            "- r3: root3",
            "- r4: root4",
            "- r5: root5",
            "- nested: deep",
            "- r6: root6",
            "- r7: ext-a",
        ],
        "{}",
        system(&reqs[0])
    );
    assert!(tool_names(&reqs[0]).contains(&"skill".to_string()));

    // `zut skills` agrees, with the source of each.
    let list = zut(&sb)
        .env("HOME", &home)
        .args(["-e", sb.path("exts/ext-a").to_str().unwrap(), "skills"])
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let text = stdout(&list);
    assert!(
        text.contains(&format!("from {}", roots[3].display())),
        "{text}"
    );
    let r7 = text.lines().position(|l| l.starts_with("r7 ")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[r7].ends_with(" ext-a"), "{text}");
    assert_eq!(lines[r7 + 1].trim(), "from extension ext-a", "{text}");
    // A nested skill is found by its path below the root too.
    let one = zut(&sb)
        .env("HOME", &home)
        .args(["skills", "group/inner/nested"])
        .output()
        .unwrap();
    assert!(
        stdout(&one).starts_with("# Skill: nested\n\ndeep\n"),
        "{}",
        stdout(&one)
    );
    let missing = zut(&sb)
        .env("HOME", &home)
        .args(["skills", "r99"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("no skill named \"r99\""),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn the_skill_tool_loads_a_body_and_refuses_user_only_skills() {
    let sb = Sandbox::new();
    let root = sb.cwd().join(".zut/skills");
    std::fs::create_dir_all(root.join("review")).unwrap();
    std::fs::write(
        root.join("review/SKILL.md"),
        skill_md(
            Some("code-review"),
            "Review a change",
            "allowed-tools: [read, bash]\npermissions:\n  bash: [\"git diff*\"]\n",
        ),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::write(
        root.join("deploy/SKILL.md"),
        skill_md(None, "Ship it", "disable-model-invocation: true\n"),
    )
    .unwrap();
    let (out, reqs) = run(
        &sb,
        &[],
        &[
            json!({"tool_calls": [{"id": "c1", "name": "skill", "args": {"name": "code-review"}}]}),
            json!({"tool_calls": [{"id": "c2", "name": "skill", "args": {"name": "deploy"}}]}),
            json!({"text": "done"}),
        ],
        &["-p", "review please"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    assert_eq!(
        skill_lines(&system(&reqs[0])),
        ["- code-review: Review a change"]
    );
    assert!(!system(&reqs[0]).contains("Ship it"));
    let (is_error, text) = last_tool_result(&reqs[1]);
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("# Skill: code-review\n\nReview a change\n"),
        "{text}"
    );
    assert!(text.contains("Allowed tools: read, bash"), "{text}");
    assert!(text.contains("- bash: git diff*"), "{text}");
    assert!(
        text.ends_with("---\n\nBody of the Review a change skill."),
        "{text}"
    );
    let (is_error, text) = last_tool_result(&reqs[2]);
    assert!(is_error);
    assert!(text.contains("reserved for the user"), "{text}");
    assert!(!text.contains("Body of the Ship it"), "{text}");
}

#[test]
fn slash_skill_expands_into_the_user_message_in_every_mode() {
    let sb = Sandbox::new();
    let dir = sb.cwd().join(".claude/skills/deploy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        skill_md(None, "Ship it", "disable_model_invocation: true\n"),
    )
    .unwrap();
    let (out, reqs) = run(
        &sb,
        &[],
        &[json!({"text": "shipped"})],
        &["-p", "/skill:deploy to staging now"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "shipped\n");
    let text = first_user_text(&reqs[0]);
    assert!(text.contains("# Skill: deploy\n\nShip it\n"), "{text}");
    assert!(text.contains("Body of the Ship it skill."), "{text}");
    assert!(
        text.contains(&format!("Skill directory: {}", dir.display())),
        "{text}"
    );
    assert!(text.ends_with("User request:\nto staging now"), "{text}");
    // The model is never told about it on its own.
    assert!(skill_lines(&system(&reqs[0])).is_empty());
    assert!(!tool_names(&reqs[0]).contains(&"skill".to_string()));

    // JSON mode: a command_result, then the turn with the same message.
    let (out, reqs) = run(
        &sb,
        &[],
        &[json!({"text": "shipped"})],
        &["--mode", "json", "/skill:deploy"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = json_lines(&out.stdout);
    let result = events
        .iter()
        .find(|e| e["type"] == "command_result")
        .unwrap();
    assert_eq!(result["name"], "skill:deploy");
    assert_eq!(result["action"], "prompt");
    let sent = first_user_text(&reqs[0]);
    assert_eq!(result["text"], sent.as_str());
    assert!(!sent.contains("User request"), "{sent}");

    // `/skills` lists without a model call; an unknown name fails.
    let (out, reqs) = run(&sb, &[], &[], &["-p", "/skills"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("deploy  Ship it [only via /skill:]"),
        "{}",
        stdout(&out)
    );
    assert!(reqs.is_empty());
    let (out, reqs) = run(&sb, &[], &[], &["-p", "/skill:deplyo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("did you mean \"deploy\""),
        "{}",
        stderr(&out)
    );
    assert!(reqs.is_empty());
}

#[test]
fn no_skills_turns_everything_off() {
    let sb = Sandbox::new();
    put_skill(
        &sb.cwd().join(".zut/skills/review"),
        None,
        "Review a change",
    );
    let ext = theme_ext(&sb, "bundler", &["skills"]);
    put_skill(&ext.join("skills/phases"), None, "Phase plan");
    let (out, reqs) = run(
        &sb,
        std::slice::from_ref(&ext),
        &[
            json!({"tool_calls": [{"id": "c1", "name": "skill", "args": {"name": "review"}}]}),
            json!({"text": "ok"}),
        ],
        &["--no-skills", "-p", "hi"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sys = system(&reqs[0]);
    assert!(
        skill_lines(&sys).is_empty() && !sys.contains("Review a change"),
        "{sys}"
    );
    assert!(!tool_names(&reqs[0]).contains(&"skill".to_string()));
    let (is_error, text) = last_tool_result(&reqs[1]);
    assert!(is_error && !text.contains("Body of"), "{text}");
    let (out, reqs) = run(&sb, &[ext], &[], &["--no-skills", "-p", "/skill:review"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--no-skills"), "{}", stderr(&out));
    assert!(reqs.is_empty());
}

#[test]
fn two_extensions_bundle_the_same_name_and_a_direct_skill_dir() {
    let sb = Sandbox::new();
    let a = theme_ext(&sb, "tasked", &["skills/phases", "more"]);
    put_skill(&a.join("skills/phases"), None, "Phase checklist");
    put_skill(&a.join("more/shared"), None, "shared from tasked");
    let b = theme_ext(&sb, "other", &["skills"]);
    put_skill(&b.join("skills/shared"), None, "shared from other");
    put_skill(&b.join("skills/own"), Some("own-skill"), "only other");
    std::fs::write(b.join("skills/stray.md"), "not a skill").unwrap();
    let (out, reqs) = run(
        &sb,
        &[a.clone(), b.clone()],
        &[json!({"text": "ok"})],
        &["-p", "hi"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        skill_lines(&system(&reqs[0])),
        [
            "- phases: Phase checklist",
            "- shared: shared from tasked",
            "- own-skill: only other"
        ]
    );
    // Reversed load order, reversed winner.
    let (_, reqs) = run(&sb, &[b, a], &[json!({"text": "ok"})], &["-p", "hi"]);
    assert!(skill_lines(&system(&reqs[0])).contains(&"- shared: shared from other".to_string()));
}

/// Builds an extension whose manifest tries every way out, next to an
/// `outside` directory holding skills that carry [`MARKER`].
fn escaping_extension(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let outside = sb.path("outside");
    for name in [
        "abs-skill",
        "up-skill",
        "dir-link-skill",
        "child-link-skill",
        "file-link",
    ] {
        std::fs::create_dir_all(outside.join(name)).unwrap();
        std::fs::write(
            outside.join(name).join("SKILL.md"),
            format!("---\ndescription: {MARKER} {name}\n---\n{MARKER} body\n"),
        )
        .unwrap();
    }
    std::fs::write(outside.join("SKILL.md"), format!("{MARKER} root")).unwrap();
    let ext = sb.fixture("sh-hello", &[]);
    let skills = ext.join("skills");
    std::fs::create_dir_all(skills.join("good")).unwrap();
    std::fs::write(skills.join("good/SKILL.md"), skill_md(None, "Inside", "")).unwrap();
    // A skill directory whose SKILL.md is a symlink to a file outside.
    std::fs::create_dir_all(skills.join("filelinked")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("file-link/SKILL.md"),
        skills.join("filelinked/SKILL.md"),
    )
    .unwrap();
    // A child directory that is a symlink to a directory outside.
    std::os::unix::fs::symlink(outside.join("child-link-skill"), skills.join("dirlinked")).unwrap();
    // A declared path that is itself a symlink to a directory outside.
    std::os::unix::fs::symlink(outside.join("dir-link-skill"), ext.join("linked")).unwrap();
    // A declared direct-skill directory whose SKILL.md links outside.
    std::fs::create_dir_all(ext.join("direct")).unwrap();
    std::os::unix::fs::symlink(outside.join("SKILL.md"), ext.join("direct/SKILL.md")).unwrap();
    let manifest = ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["skills"] = json!([
        "skills",
        "../outside/up-skill",
        "skills/../../../outside",
        outside.join("abs-skill").display().to_string(),
        "linked",
        "direct",
        "",
    ]);
    std::fs::write(&manifest, m.to_string()).unwrap();
    (ext, outside)
}

#[test]
fn escapes_are_refused_and_nothing_outside_reaches_the_model() {
    let sb = Sandbox::new();
    let (ext, _outside) = escaping_extension(&sb);
    let calls: Vec<Value> = ["abs-skill", "up-skill", "dir-link-skill", "dirlinked", "filelinked", "direct", "outside"]
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"tool_calls": [{"id": format!("c{i}"), "name": "skill", "args": {"name": n}}]}))
        .chain([json!({"text": "ok"})])
        .collect();
    let (out, reqs) = run(
        &sb,
        std::slice::from_ref(&ext),
        &calls,
        &["--mode", "json", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let raw = std::fs::read_to_string(sb.path("requests.jsonl")).unwrap();
    assert!(
        !raw.contains(MARKER),
        "outside content reached the provider"
    );
    assert_eq!(reqs.len(), calls.len());
    assert_eq!(skill_lines(&system(&reqs[0])), ["- good: Inside"]);
    for r in &reqs[1..] {
        assert!(last_tool_result(r).0, "{r}");
    }
    let events = json_lines(&out.stdout);
    let warnings: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "ext_warning" && e["extension"] == "sh-hello")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    let loaded_at = events
        .iter()
        .position(|e| e["type"] == "ext_loaded")
        .unwrap();
    let first_warning = events
        .iter()
        .position(|e| e["type"] == "ext_warning")
        .unwrap();
    assert!(loaded_at < first_warning, "warnings follow ext_loaded");
    for needle in [
        "\"../outside/up-skill\" escapes the extension directory",
        "\"skills/../../../outside\" escapes the extension directory",
        "\"/",
        "\"linked\" escapes the extension directory through a symlink",
        "\"direct\": direct/SKILL.md escapes the extension directory through a symlink",
        "\"skills\": skills/filelinked/SKILL.md escapes",
        "\"skills\": skills/dirlinked escapes",
        "skills path \"\" must be a directory relative",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(needle)),
            "{needle}: {warnings:#?}"
        );
    }
    assert_eq!(warnings.len(), 8, "{warnings:#?}");

    // `/skill:` cannot reach them either.
    let (out, reqs) = run(
        &sb,
        std::slice::from_ref(&ext),
        &[],
        &["-p", "/skill:dir-link-skill"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(reqs.is_empty());
    assert!(!stderr(&out).contains(MARKER) && !stdout(&out).contains(MARKER));

    // Doctor shows the refusals and the skills that are offered.
    let doc = zut(&sb)
        .env("HOME", user_home(&sb))
        .arg("-e")
        .arg(&ext)
        .args(["ext", "doctor"])
        .output()
        .unwrap();
    let text = stdout(&doc);
    assert_eq!(doc.status.code(), Some(1), "{text}{}", stderr(&doc));
    assert!(text.contains("sh-hello [flag] warning"), "{text}");
    assert!(text.contains("  skills: good\n"), "{text}");
    assert!(
        text.contains("warning: skills path \"linked\" escapes"),
        "{text}"
    );
    assert!(!text.contains(MARKER));
}

#[test]
fn theme_only_refusals_and_shadowed_bundles_in_doctor() {
    let sb = Sandbox::new();
    put_skill(&sb.cwd().join(".zut/skills/phases"), None, "project phases");
    let ext = theme_ext(&sb, "themed", &["skills", "../nope"]);
    put_skill(&ext.join("skills/phases"), None, "bundled phases");
    put_skill(&ext.join("skills/extra"), None, "bundled extra");
    let (out, _) = run(&sb, std::slice::from_ref(&ext), &[], &["--mode", "json"]);
    let events = json_lines(&out.stdout);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ext_loaded", "ext_warning"], "{events:?}");
    assert!(events[1]["message"]
        .as_str()
        .unwrap()
        .contains("\"../nope\" escapes"));
    let doc = zut(&sb)
        .env("HOME", user_home(&sb))
        .arg("-e")
        .arg(&ext)
        .args(["ext", "doctor"])
        .output()
        .unwrap();
    let text = stdout(&doc);
    assert!(text.contains("themed [flag] warning"), "{text}");
    assert!(
        text.contains(&format!(
            "  skills: extra, phases (shadowed by {})\n",
            sb.cwd().join(".zut/skills").display()
        )),
        "{text}"
    );
    assert!(
        text.contains("warning: skills path \"../nope\" escapes"),
        "{text}"
    );
}

#[test]
fn malformed_skill_files_are_skipped_with_a_warning_naming_them() {
    let sb = Sandbox::new();
    let root = sb.cwd().join(".zut/skills");
    put_skill(&root.join("fine"), None, "Works");
    std::fs::create_dir_all(root.join("broken")).unwrap();
    std::fs::write(
        root.join("broken/SKILL.md"),
        "---\nname: [oops\ndescription: x\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("spaced name")).unwrap();
    std::fs::write(root.join("spaced name/SKILL.md"), "no frontmatter").unwrap();
    let ext = theme_ext(&sb, "bundler", &["skills"]);
    std::fs::create_dir_all(ext.join("skills/bad")).unwrap();
    std::fs::write(
        ext.join("skills/bad/SKILL.md"),
        "---\ndisable-model-invocation: perhaps\n---\n",
    )
    .unwrap();
    let (out, reqs) = run(
        &sb,
        &[ext],
        &[json!({"text": "ok"})],
        &["--mode", "json", "hi"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(skill_lines(&system(&reqs[0])), ["- fine: Works"]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}", root.join("broken/SKILL.md").display())),
        "{err}"
    );
    assert!(err.contains("never closed"), "{err}");
    assert!(err.contains("spaced name/SKILL.md"), "{err}");
    let events = json_lines(&out.stdout);
    assert!(events.iter().any(|e| e["type"] == "ext_warning"
        && e["extension"] == "bundler"
        && e["message"]
            .as_str()
            .unwrap()
            .contains("skills/bad/SKILL.md")
        && e["message"].as_str().unwrap().contains("true or false")));
}

#[test]
fn install_copies_declared_skills_even_when_ignored() {
    let sb = Sandbox::new();
    let src = theme_ext(&sb, "bundled", &["skills"]);
    put_skill(&src.join("skills/phases"), None, "Phase checklist");
    std::fs::write(src.join(".gitignore"), "skills/\n").unwrap();
    let install = zut(&sb)
        .env("HOME", user_home(&sb))
        .args(["ext", "install"])
        .arg(&src)
        .output()
        .unwrap();
    assert_eq!(install.status.code(), Some(0), "{}", stderr(&install));
    let installed = sb.home().join("extensions/bundled/skills/phases/SKILL.md");
    assert!(installed.is_file());
    // The installed copy is what a run offers (the source is not loaded).
    std::fs::remove_dir_all(&src).unwrap();
    let (out, reqs) = run(&sb, &[], &[json!({"text": "ok"})], &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        skill_lines(&system(&reqs[0])),
        ["- phases: Phase checklist"]
    );
    let list = zut(&sb)
        .env("HOME", user_home(&sb))
        .arg("skills")
        .output()
        .unwrap();
    assert!(
        stdout(&list).contains("from extension bundled"),
        "{}",
        stdout(&list)
    );
}
