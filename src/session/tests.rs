//! Store and session behaviour on real files in a temporary `$ZUT_HOME`.

use super::*;
use serde_json::json;
use zut_ext::wire::ContentBlock;

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let cwd = root.join("proj");
        fs::create_dir_all(&cwd).unwrap();
        Env {
            home: root.join("home"),
            cwd,
            _tmp: tmp,
        }
    }

    fn store(&self) -> Store {
        Store::new(&self.home, &self.cwd)
    }
}

fn assistant_text(t: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![Block::Text { text: t.into() }],
        from: None,
    }
}

fn tool_call(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            Block::Text {
                text: "let me look".into(),
            },
            Block::ToolCall {
                id: id.into(),
                name: "read".into(),
                args: json!({"path": "src/main.rs"}),
            },
        ],
        from: None,
    }
}

fn tool_result(id: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: id.into(),
            is_error: false,
            content: vec![ContentBlock::Text {
                text: "fn main() {}".into(),
            }],
        }],
        from: None,
    }
}

fn texts(s: &Session) -> Vec<String> {
    s.messages()
        .iter()
        .map(|m| match &m.content[0] {
            Block::Text { text } => text.clone(),
            Block::ToolResult { call_id, .. } => format!("result {call_id}"),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn round_trip_restores_transcript_states_and_identity() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    let transcript = [
        Message::user_text("read main"),
        tool_call("c1"),
        tool_result("c1"),
        assistant_text("it is empty"),
    ];
    for m in &transcript {
        s.append_message(m).unwrap();
    }
    s.set_state("todo", json!({"items": ["a", "b"]})).unwrap();
    s.set_state("notes", json!("x")).unwrap();
    s.set_state("notes", Value::Null).unwrap();
    let id = s.id().to_string();
    drop(s);

    let back = store.open(&id).unwrap();
    assert_eq!(back.messages().as_slice(), &transcript);
    assert_eq!(
        back.states(),
        &BTreeMap::from([("todo".to_string(), json!({"items": ["a", "b"]}))])
    );
    assert!(back.warning().is_none());
    let info = back.info();
    assert_eq!(info.id, id);
    assert_eq!(info.parent_id, "");
    assert_eq!(info.fork_point, 0);
    assert_eq!(info.cwd, env.cwd.to_string_lossy());
    assert_eq!(
        Path::new(&info.path),
        store.dir().join(format!("{id}.jsonl"))
    );
    assert!(store.dir().starts_with(env.home.join("sessions")));
}

#[test]
fn who_added_a_message_survives_resume_and_fork_beside_the_message() {
    let env = Env::new();
    let mut s = env.store().create().unwrap();
    s.append_message(&Message::user_text("typed")).unwrap();
    s.append_message(&Message::continuation("keep going", "guard"))
        .unwrap();
    let from = |s: &Session| -> Vec<Option<String>> {
        s.messages().iter().map(|m| m.from.clone()).collect()
    };
    let expected = vec![None, Some("guard".to_string())];
    let (id, path) = (s.id().to_string(), s.path().to_path_buf());
    drop(s);
    let resumed = env.store().open(&id).unwrap();
    assert_eq!(from(&resumed), expected);
    assert_eq!(from(&resumed.fork(None).unwrap()), expected);
    // The row names it; the message itself is what providers see.
    let text = std::fs::read_to_string(path).unwrap();
    let row: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["message"]["content"][0]["text"] == "keep going")
        .expect("the continuation's row");
    assert_eq!(row["extension"], "guard");
    assert!(row["message"].get("from").is_none(), "{row}");
}

#[test]
fn fork_copies_messages_and_state_as_of_the_fork_point() {
    let env = Env::new();
    let mut s = env.store().create().unwrap();
    s.set_state("a", json!(0)).unwrap(); // at 0 messages
    s.append_message(&Message::user_text("one")).unwrap();
    s.append_message(&assistant_text("two")).unwrap();
    s.set_state("a", json!(2)).unwrap(); // at 2
    s.set_state("b", json!("b2")).unwrap(); // at 2
    s.append_message(&Message::user_text("three")).unwrap();
    s.set_state("a", json!(3)).unwrap(); // at 3
    s.set_state("b", Value::Null).unwrap(); // at 3
    s.append_message(&assistant_text("four")).unwrap();

    let child = s.fork(Some(2)).unwrap();
    assert_eq!(texts(&child), ["one", "two"]);
    assert_eq!(
        child.states(),
        &BTreeMap::from([("a".into(), json!(2)), ("b".into(), json!("b2"))])
    );
    assert_eq!(child.parent_id(), Some(s.id()));
    assert_eq!(child.fork_point(), Some(2));
    assert_ne!(child.id(), s.id());

    let early = s.fork(Some(1)).unwrap();
    assert_eq!(early.states(), &BTreeMap::from([("a".into(), json!(0))]));

    let whole = s.fork(None).unwrap();
    assert_eq!(texts(&whole), ["one", "two", "three", "four"]);
    assert_eq!(whole.states(), &BTreeMap::from([("a".into(), json!(3))]));

    // The child's file says the same when read back, and the parent is
    // untouched by forking.
    let reread = env.store().read(child.id()).unwrap();
    assert_eq!(*reread.messages(), *child.messages());
    assert_eq!(reread.states(), child.states());
    assert_eq!(reread.info().parent_id, s.id());
    assert_eq!(reread.info().fork_point, 2);
    assert_eq!(env.store().read(s.id()).unwrap().messages().len(), 4);

    assert!(matches!(
        s.fork(Some(5)),
        Err(SessionError::ForkOutOfRange { at: 5, len: 4 })
    ));
}

#[test]
fn fork_between_a_tool_call_and_its_results_keeps_the_pair() {
    let env = Env::new();
    let mut s = env.store().create().unwrap();
    for m in [
        Message::user_text("read"),
        tool_call("c1"),
        tool_result("c1"),
        assistant_text("done"),
    ] {
        s.append_message(&m).unwrap();
    }
    let child = s.fork(Some(2)).unwrap();
    assert_eq!(child.fork_point(), Some(3));
    assert_eq!(texts(&child), ["read", "let me look", "result c1"]);
}

#[test]
fn compaction_is_replayed_on_load_and_resets_state_at_fork() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("first")).unwrap();
    s.append_message(&tool_call("c1")).unwrap();
    s.append_message(&tool_result("c1")).unwrap();
    s.set_state("a", json!("late")).unwrap(); // at 3 messages
    s.append_message(&assistant_text("answer")).unwrap();
    s.append_message(&Message::user_text("second")).unwrap();
    s.append_message(&assistant_text("answer 2")).unwrap();
    assert_eq!(s.compact_point(), Some(4));

    s.compact("they talked".into()).unwrap();
    let expect = [
        format!("{SUMMARY_PREFIX}they talked"),
        "second".into(),
        "answer 2".into(),
    ];
    assert_eq!(texts(&s), expect);
    let back = store.read(s.id()).unwrap();
    assert_eq!(texts(&back), expect);
    assert_eq!(
        back.states(),
        &BTreeMap::from([("a".into(), json!("late"))])
    );

    // State recorded before the compaction belongs to every fork inside the
    // new transcript, even one at message 1.
    let child = back.fork(Some(1)).unwrap();
    assert_eq!(
        child.states(),
        &BTreeMap::from([("a".into(), json!("late"))])
    );

    let mut fresh = store.create().unwrap();
    fresh.append_message(&Message::user_text("only")).unwrap();
    assert!(matches!(
        fresh.compact("x".into()),
        Err(SessionError::NothingToCompact)
    ));
}

#[test]
fn torn_last_row_is_skipped_with_one_warning_and_appends_continue() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("kept")).unwrap();
    let (id, path) = (s.id().to_string(), s.path().to_path_buf());
    drop(s);
    // zut killed in the middle of writing a row.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"type":"message","message":{"role":"assist"#)
        .unwrap();
    drop(f);

    let mut s = store.open(&id).unwrap();
    assert_eq!(texts(&s), ["kept"]);
    let w = s.warning().unwrap();
    assert_eq!(w.skipped, 1);
    assert_eq!(
        w.to_string(),
        format!("session file {}: skipped 1 unreadable row", path.display())
    );

    // The next row starts on a line of its own, not glued to the fragment.
    s.append_message(&assistant_text("after")).unwrap();
    drop(s);
    let s = store.open(&id).unwrap();
    assert_eq!(texts(&s), ["kept", "after"]);
    assert_eq!(s.warning().unwrap().skipped, 1);
}

#[test]
fn damaged_rows_make_one_warning_that_counts_them() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("a")).unwrap();
    let path = s.path().to_path_buf();
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"not json\n\xff\xfe\n{\"type\":\"message\",\"message\":{\"role\":\"robot\",\"content\":[]}}\n{\"type\":\"compaction\",\"summary\":\"s\",\"kept\":99}\n")
        .unwrap();
    s.append_message(&assistant_text("b")).unwrap();
    let back = store.read(s.id()).unwrap();
    assert_eq!(texts(&back), ["a", "b"]);
    assert_eq!(back.warning().map(|w| w.skipped), Some(4));
}

#[test]
fn unknown_row_types_are_skipped_silently() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("a")).unwrap();
    let mut f = OpenOptions::new().append(true).open(s.path()).unwrap();
    f.write_all(b"{\"type\":\"label\",\"text\":\"from a newer zut\"}\n\n")
        .unwrap();
    s.append_message(&assistant_text("b")).unwrap();
    let back = store.read(s.id()).unwrap();
    assert_eq!(texts(&back), ["a", "b"]);
    assert!(back.warning().is_none());
}

#[test]
fn state_limit_is_exact_and_a_refusal_changes_nothing() {
    let env = Env::new();
    let mut s = env.store().create().unwrap();
    // A JSON string of n characters is n + 2 bytes of compact JSON.
    let fits = Value::String("x".repeat(STATE_LIMIT - 2));
    assert_eq!(serde_json::to_vec(&fits).unwrap().len(), 262_144);
    s.set_state("big", fits.clone()).unwrap();
    let len_before = fs::metadata(s.path()).unwrap().len();

    let over = Value::String("y".repeat(STATE_LIMIT - 1));
    match s.set_state("big", over) {
        Err(StateError::TooLarge { extension, bytes }) => {
            assert_eq!((extension.as_str(), bytes), ("big", 262_145));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(s.states()["big"], fits);
    assert_eq!(fs::metadata(s.path()).unwrap().len(), len_before);
    assert_eq!(env.store().read(s.id()).unwrap().states()["big"], fits);
    assert!(matches!(
        s.set_state(" ", json!(1)),
        Err(StateError::NoName)
    ));
}

#[test]
fn list_latest_open_and_delete() {
    let env = Env::new();
    let store = env.store();
    assert!(store.list().is_empty());
    assert_eq!(store.latest(), None);

    let mut a = store.create().unwrap();
    a.append_message(&Message::user_text("  fix the\n  parser  "))
        .unwrap();
    a.append_message(&assistant_text("ok")).unwrap();
    let b = a.fork(Some(0)).unwrap();
    // Make `a` the most recently written regardless of clock resolution.
    let later = SystemTime::now() + std::time::Duration::from_secs(5);
    File::options()
        .append(true)
        .open(a.path())
        .unwrap()
        .set_modified(later)
        .unwrap();

    assert_eq!(store.latest().as_deref(), Some(a.id()));
    let list = store.list();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, a.id());
    assert_eq!(list[0].title, "fix the parser");
    assert_eq!(list[0].messages, 2);
    assert_eq!(list[0].parent_id, None);
    assert_eq!(list[1].id, b.id());
    assert_eq!(list[1].parent_id.as_deref(), Some(a.id()));
    assert_eq!(list[1].fork_point, Some(0));
    assert_eq!(list[1].messages, 0);

    // Another spelling of the same directory finds the same sessions.
    let dotted = Store::new(&env.home, &env.cwd.join("."));
    assert_eq!(dotted.dir(), store.dir());

    assert!(matches!(
        store.open("../x"),
        Err(SessionError::Unknown { .. })
    ));
    assert!(matches!(
        store.open("nope"),
        Err(SessionError::Unknown { .. })
    ));
    store.delete(a.id()).unwrap();
    assert!(matches!(
        store.delete(a.id()),
        Err(SessionError::Unknown { .. })
    ));
    assert_eq!(store.latest().as_deref(), Some(b.id()));
}

#[test]
fn a_unique_part_of_an_id_names_its_session() {
    let env = Env::new();
    let store = env.store();
    let made = store.create().unwrap();
    let real = made.id().to_string();
    drop(made);
    // Only file names matter to resolving: copies under chosen ids.
    let ids = [
        "20261203-171141-2f8f",
        "20261203-171141-aaaa",
        "20261204-090000-bbbb",
    ];
    for id in ids {
        fs::copy(store.path_of(&real).unwrap(), store.path_of(id).unwrap()).unwrap();
    }
    let resolve = |q: &str| store.resolve(q).map_err(|e| e.to_string());
    assert_eq!(resolve(&real).unwrap(), real, "a full id is itself");
    assert_eq!(
        resolve("171141-2f8f").unwrap(),
        ids[0],
        "the footer's short id"
    );
    assert_eq!(resolve("2f8f").unwrap(), ids[0], "its last part");
    assert_eq!(resolve("20261204").unwrap(), ids[2], "a date prefix");
    let shared = resolve("20261203-171141").unwrap_err();
    assert!(
        shared.contains("matches 2 sessions (20261203-171141-aaaa, 20261203-171141-2f8f)")
            && shared.contains("give more of its id"),
        "{shared}"
    );
    // Too short to complete, or matching nothing: unknown, as before.
    assert!(matches!(
        store.open("f8f"),
        Err(SessionError::Unknown { .. })
    ));
    assert!(matches!(
        store.open("zzzz"),
        Err(SessionError::Unknown { .. })
    ));
    assert_eq!(
        store.read("bbbb").unwrap().path(),
        store.path_of(ids[2]).unwrap()
    );
    assert_eq!(store.delete("aaaa").unwrap(), ids[1]);
    assert!(!store.path_of(ids[1]).unwrap().exists());
}

#[test]
fn empty_sessions_can_be_discarded() {
    let env = Env::new();
    let s = env.store().create().unwrap();
    let path = s.path().to_path_buf();
    assert!(s.discard_if_empty().unwrap());
    assert!(!path.exists());

    let mut s = env.store().create().unwrap();
    s.set_state("a", json!(1)).unwrap();
    let path = s.path().to_path_buf();
    assert!(!s.discard_if_empty().unwrap());
    assert!(path.exists());
}

#[test]
fn a_file_without_a_header_is_not_a_session() {
    let env = Env::new();
    let store = env.store();
    fs::create_dir_all(store.dir()).unwrap();
    fs::write(store.dir().join("x.jsonl"), "{\"type\":\"message\"}\n").unwrap();
    assert!(matches!(
        store.open("x"),
        Err(SessionError::NotSession { .. })
    ));
    assert!(store.list().is_empty());
}

#[test]
fn cwd_keys_are_readable_stable_and_distinct() {
    let k = cwd_key(Path::new("/home/me/my proj"));
    assert!(k.starts_with("home-me-my-proj-"), "{k}");
    assert_eq!(k, cwd_key(Path::new("/home/me/my proj")));
    assert_ne!(cwd_key(Path::new("/a/b-c")), cwd_key(Path::new("/a-b/c")));
    assert!(cwd_key(Path::new("/")).starts_with("root-"));
    let long = cwd_key(Path::new(&format!("/{}", "d/".repeat(100))));
    assert!(long.len() <= 48 + 9, "{long}");
    for k in [k, long] {
        assert!(k
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)));
    }
}

#[test]
fn a_call_interrupted_by_a_crash_is_repaired_once_and_written_back() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("run it")).unwrap();
    s.append_message(&tool_call("c1")).unwrap();
    let id = s.id().to_string();
    // zut killed (kill -9, OOM) while the tool ran: no result row.
    drop(s);

    let s = store.open(&id).unwrap();
    let w = s.warning().expect("one warning");
    assert_eq!((w.dangling, w.orphans), (1, 0));
    assert!(w.to_string().contains("1 interrupted tool call"), "{w}");
    assert_eq!(s.messages().len(), 3);
    assert!(has_tool_results(&s.messages()[2]));
    drop(s);
    // The repair was written: the file alone now says the same.
    let again = store.read(&id).unwrap();
    assert!(again.warning().is_none());
    assert_eq!(again.messages().len(), 3);
}

#[test]
fn a_result_without_its_call_is_dropped_on_load() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("hi")).unwrap();
    s.append_message(&assistant_text("hello")).unwrap();
    s.append_message(&Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "gone".into(),
            is_error: false,
            content: vec![],
        }],
        from: None,
    })
    .unwrap();
    let id = s.id().to_string();
    drop(s);
    let s = store.open(&id).unwrap();
    assert_eq!(s.warning().map(|w| w.orphans), Some(1));
    assert!(!has_tool_results(&s.messages()[2]));
}

#[test]
fn a_session_open_for_writing_is_busy_for_a_second_writer_but_readable() {
    let env = Env::new();
    let store = env.store();
    let mut s = store.create().unwrap();
    s.append_message(&Message::user_text("mine")).unwrap();
    let id = s.id().to_string();
    assert!(matches!(store.open(&id), Err(SessionError::Busy { .. })));
    assert_eq!(texts(&store.read(&id).unwrap()), ["mine"]);
    drop(s);
    store.open(&id).expect("free again once closed");
}

#[test]
fn a_symlinked_session_file_is_refused() {
    let env = Env::new();
    let store = env.store();
    let s = store.create().unwrap();
    let target = s.path().to_path_buf();
    drop(s);
    let link = store.dir().join("20990101-000000-abcd.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = store.open("20990101-000000-abcd").unwrap_err();
    assert!(matches!(e, SessionError::Symlink { .. }), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
}

#[test]
fn session_files_and_directories_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let s = env.store().create().unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(s.path()), 0o600);
    assert_eq!(mode(s.path().parent().unwrap()), 0o700);
    assert_eq!(mode(&env.home.join("sessions")), 0o700);
    assert_eq!(mode(&env.home), 0o700);
}

#[test]
fn a_handed_over_transcript_is_the_sessions_own_list() {
    let env = Env::new();
    let mut s = env.store().create().unwrap();
    s.append_message(&Message::user_text("one")).unwrap();
    let shared = s.transcript();
    assert!(shared.same(&s.transcript()));
    // The holder appends; the session writes the row only.
    let two = assistant_text("two");
    s.record_message(&two).unwrap();
    shared.push(two);
    s.record_message(&Message::user_text("three")).unwrap();
    shared.push(Message::user_text("three"));
    assert_eq!(texts(&s), ["one", "two", "three"]);
    // A compaction changes the list the holder has.
    s.compact("sum".into()).unwrap();
    assert_eq!(shared.len(), 2);
    // And the file says what memory holds.
    let back = env.store().read(s.id()).unwrap();
    assert_eq!(*back.messages(), *shared.read());
}
