#!/bin/sh
# Checks this extension against the zut extension protocol: it starts the
# extension alone, calls each tool and command, and expects a clean
# shutdown. Prints one PASS, WARN or FAIL line per check; exits non-zero
# when a check failed. Set ZUT to use a zut other than the one on PATH.
cd "$(dirname "$0")" || exit 1
exec "${ZUT:-zut}" ext test .
