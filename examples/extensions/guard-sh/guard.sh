#!/bin/sh
# guard-sh: a guardrail extension in POSIX sh, with no jq.
#
# It intercepts every tool call before it runs. A `bash` call whose command
# matches a danger pattern (rm -rf, sudo, mkfs, dd of=/) is refused with a
# reason the model reads as the tool's error; everything else is allowed.
# It also subscribes to turn_start / turn_end and logs them on stderr,
# which zut appends to $ZUT_HOME/logs/ext-guard-sh.log.
#
# This is a demonstration, not a sandbox: a determined command can always be
# spelt in a way a pattern list does not foresee.
#
# Reading JSON without a parser. The host writes compact JSON, one frame per
# line, with "type" first and "id" right after it, and it escapes every `"`
# inside a string value as `\"`. So:
#   - the first `"type":"` of a line is the frame's type and the first
#     `"id":"` its correlation id (a nested object can only come later);
#   - an unescaped `"key":"` sequence is always a real key, never text
#     inside a string value.
# The values we pull out this way (types, ids, event and tool names) never
# contain quotes. The bash command itself is never unescaped: the danger
# patterns are matched against the raw JSON text of the arguments.

NAME=guard-sh

log() {
  printf '[%s] %s\n' "$NAME" "$*" >&2
}

# string_field KEY: sets $value to the first "KEY":"..." string in $line
# (empty when there is none).
string_field() {
  value=
  case $line in
    *"\"$1\":\""*)
      value=${line#*\"$1\":\"}
      value=${value%%\"*}
      ;;
  esac
}

# number_field KEY: sets $value to the first "KEY":<number> in $line.
number_field() {
  value=
  case $line in
    *"\"$1\":"[0-9-]*)
      value=${line#*\"$1\":}
      value=${value%%[!0-9-]*}
      ;;
  esac
}

# A word boundary inside JSON text: start, a non-word character, or an
# escaped newline/tab (`\n` and `\t` are two characters in the JSON text).
B='(^|[^[:alnum:]_-]|\\[nt])'
# Whitespace, raw or escaped.
S='([[:space:]]|\\[nt])'

# danger ARGS: sets $pattern to the name of the first danger pattern that
# ARGS (the tool's arguments as JSON text) matches; returns 1 if none does.
danger() {
  pattern=
  if matches "$1" "${B}rm${S}+(-[[:alnum:]-]+${S}+)*-[[:alpha:]]*([rR][[:alpha:]]*f|f[[:alpha:]]*[rR])"; then
    pattern='rm -rf'
  elif matches "$1" "${B}sudo(${S}|[^[:alnum:]_-]|$)"; then
    pattern='sudo'
  elif matches "$1" "${B}mkfs"; then
    pattern='mkfs'
  elif matches "$1" "${B}dd${S}.*of=/"; then
    pattern='dd of=/'
  else
    return 1
  fi
}

matches() {
  printf '%s\n' "$1" | grep -Eq -- "$2"
}

# Every event_intercept gets exactly one response with the same id; an
# empty response means "allow, unchanged".
allow() {
  printf '{"type":"event_intercept_response","id":"%s"}\n' "$1"
}

block() {
  # $2 is one of our own fixed messages: no quotes or backslashes to escape.
  printf '{"type":"event_intercept_response","id":"%s","block":true,"reason":"%s"}\n' "$1" "$2"
}

on_intercept() {
  string_field id; id=$value
  string_field event; event=$value
  string_field tool_name; tool=$value
  if [ "$event" = tool_call ] && [ "$tool" = bash ]; then
    args=${line#*\"tool_args\":}
    if danger "$args"; then
      log "refused bash call: matches '$pattern'"
      block "$id" "refused by guard-sh: the command matches the danger pattern '$pattern'. Do not retry it; ask the user to run it themselves if it is really intended."
      return
    fi
  fi
  allow "$id"
}

on_event() {
  string_field event
  case $value in
    turn_start)
      number_field step
      log "turn started (step $value)"
      ;;
    turn_end)
      string_field stop; stop=$value
      string_field error
      log "turn ended (stop: $stop${value:+, error: $value})"
      ;;
    *)
      log "event $value"
      ;;
  esac
}

# hello must be the first line on stdout.
printf '%s\n' '{"type":"hello","protocol_version":2,"name":"guard-sh","version":"1.0.0","capabilities":["events"]}'

# `read` also returns the last line when it lacks a newline.
while IFS= read -r line || [ -n "$line" ]; do
  string_field type
  case $value in
    hello_ack)
      number_field protocol_version
      if [ "$value" != 2 ]; then
        log "unsupported protocol version '$value'"
        exit 1
      fi
      printf '%s\n' '{"type":"subscribe","events":["turn_start","turn_end"],"intercept":["tool_call"]}'
      printf '%s\n' '{"type":"ready"}'
      ;;
    event_intercept)
      on_intercept
      ;;
    event)
      on_event
      ;;
    shutdown)
      printf '%s\n' '{"type":"shutdown_ack"}'
      exit 0
      ;;
    *)
      log "ignoring frame '$value'"
      ;;
  esac
done
# stdin closed without a shutdown frame: the host went away.
exit 0
