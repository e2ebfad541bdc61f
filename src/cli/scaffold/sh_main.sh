#!/bin/sh
# @NAME@: a zut extension in plain POSIX sh, no SDK and no jq.
#
#   /@NAME@ [who]   shows "hello, <who> from @NAME@" (no model call)
#   @TOOL@          a tool the model can call; returns its arguments as text
#
# The protocol is one JSON object per line: this script writes frames on
# stdout and reads zut's frames on stdin. Diagnostics go to stderr, which zut
# keeps in $ZUT_HOME/logs/ext-@NAME@.log. The frames are picked apart with
# case and sed, which works because zut writes compact JSON with its fields
# in a fixed order (type, id, name, args); anything bigger deserves jq or
# one of the SDKs (zut ext new --lang python|typescript|rust).

send() {
    printf '%s\n' "$1"
}

send '{"type":"hello","protocol_version":2,"name":"@NAME@","version":"0.1.0","capabilities":["commands","tools"]}'

while IFS= read -r line; do
    case $line in
    '{"type":"hello_ack",'*)
        case $line in
        *'"protocol_version":2,'* | *'"protocol_version":2}'*) ;;
        *)
            echo "@NAME@: zut speaks another protocol version: $line" >&2
            exit 1
            ;;
        esac
        send '{"type":"register_command","name":"@NAME@","description":"say hello: /@NAME@ [who]"}'
        send '{"type":"register_tool","name":"@TOOL@","description":"Return the arguments of the call as JSON text.","schema":{"type":"object"}}'
        send '{"type":"ready"}'
        ;;
    '{"type":"command_invoked",'*)
        id=$(printf '%s\n' "$line" | sed 's/^{"type":"command_invoked","id":"\([^"]*\)".*/\1/')
        # args is a JSON string already escaped, so it can be pasted into
        # another JSON string unchanged; the host omits it when empty.
        case $line in
        *'"args":"'*) who=$(printf '%s\n' "$line" | sed 's/^{"type":"command_invoked","id":"[^"]*","name":"[^"]*","args":"\(.*\)"}$/\1/') ;;
        *) who=you ;;
        esac
        send '{"type":"command_response","id":"'"$id"'","action":"display","display":"hello, '"$who"' from @NAME@"}'
        ;;
    '{"type":"tool_call",'*)
        id=$(printf '%s\n' "$line" | sed 's/^{"type":"tool_call","id":"\([^"]*\)".*/\1/')
        # The args object is the last field; escape it to carry it as text.
        args=$(printf '%s\n' "$line" | sed 's/^{"type":"tool_call","id":"[^"]*","name":"[^"]*","args":\(.*\)}$/\1/; s/\\/\\\\/g; s/"/\\"/g')
        send '{"type":"tool_result","id":"'"$id"'","content":[{"type":"text","text":"'"$args"'"}]}'
        ;;
    '{"type":"shutdown"'*)
        send '{"type":"shutdown_ack"}'
        exit 0
        ;;
    *)
        # Frames this extension does not use; new ones appear as the
        # protocol grows and must be ignored.
        ;;
    esac
done
