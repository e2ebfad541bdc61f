#!/usr/bin/env node
// A minimal client for `zut --mode rpc`, Node.js built-ins only.
//
// Usage: client.js [--yes | --no] PROMPT... [-- ZUT-ARGS...]
//
// Starts zut (the binary named by $ZUT_BIN, default `zut` on PATH) in RPC
// mode with ZUT-ARGS, sends PROMPT, prints the streamed answer on stdout and
// tool activity on stderr, and answers each confirmation: --yes allows, --no
// denies, otherwise it asks on the terminal. Exits when the turn is done:
// 0, or 1 when zut reported an error.
"use strict";

const { spawn } = require("child_process");
const readline = require("readline");

let argv = process.argv.slice(2);
let zutArgs = [];
const cut = argv.indexOf("--");
if (cut >= 0) {
  zutArgs = argv.slice(cut + 1);
  argv = argv.slice(0, cut);
}
let answer = null;
const words = [];
for (const arg of argv) {
  if (arg === "--yes") answer = "allow";
  else if (arg === "--no") answer = "deny";
  else words.push(arg);
}
const prompt = words.join(" ") || "hello";
let status = 0;
let finished = false;

const zut = spawn(process.env.ZUT_BIN || "zut", ["--mode", "rpc", ...zutArgs], {
  stdio: ["pipe", "pipe", "inherit"],
});
zut.on("error", (err) => {
  console.error(`cannot start zut: ${err.message}`);
  process.exit(1);
});

function send(request) {
  if (finished) return;
  zut.stdin.write(JSON.stringify(request) + "\n");
}

// Asks the person at the terminal; without one, denies.
function ask(msg) {
  const question = `\nallow ${msg.tool_name}: ${msg.preview}? [y/N] `;
  if (!process.stdin.isTTY) {
    process.stderr.write(question + "no terminal to ask on: denied\n");
    return Promise.resolve("deny");
  }
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  return new Promise((resolve) =>
    rl.question(question, (reply) => {
      rl.close();
      resolve(["y", "yes"].includes(reply.trim().toLowerCase()) ? "allow" : "deny");
    })
  );
}

function finish() {
  if (finished) return;
  finished = true;
  // Closing stdin asks zut to shut its extensions down and exit.
  zut.stdin.end();
}
zut.on("exit", () => {
  process.stdout.write("\n");
  process.exit(status);
});

// With ZUT_RPC_TOKEN set (zut inherits it), hello must come first.
send({ id: "hello", type: "hello", token: process.env.ZUT_RPC_TOKEN || null });
send({ id: "prompt", type: "prompt", message: prompt });

const lines = readline.createInterface({ input: zut.stdout });
lines.on("line", async (line) => {
  const msg = JSON.parse(line);
  switch (msg.type) {
    case "response":
      if (!msg.success) {
        console.error(`zut refused ${msg.command}: ${msg.error}`);
        status = 1;
        finish();
      }
      break;
    case "text_delta":
      process.stdout.write(msg.delta);
      break;
    case "tool_call":
      process.stderr.write(`\n[tool] ${msg.name} ${JSON.stringify(msg.args)}\n`);
      break;
    case "confirmation_requested": {
      const decision = answer || (await ask(msg));
      send({ id: `confirm-${msg.request_id}`, type: "confirm", request_id: msg.request_id, decision });
      break;
    }
    case "error":
      status = 1;
    // falls through
    case "ext_error":
      process.stderr.write(`\n[error] ${msg.message}\n`);
      break;
    case "done":
      finish();
      break;
  }
});
