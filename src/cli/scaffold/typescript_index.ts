// @NAME@: a zut extension in TypeScript.
//
//   /@NAME@ [who]: shows "hello, <who> from @NAME@" (no model call)
//   @TOOL@: a tool the model can call; it returns its text argument
//
// zut-ext.js beside this file is the zut TypeScript SDK, compiled to
// JavaScript, and zut-ext.d.ts its types. `npm run build` compiles this
// file to index.js, which zut runs (see extension.json). stdout carries
// protocol frames; log with console.error, which zut keeps in
// $ZUT_HOME/logs/ext-@NAME@.log.

import * as zx from "./zut-ext.js";

const { s } = zx;

const ext = new zx.Extension("@NAME@", "0.1.0"); // the name must match extension.json

ext.command("@NAME@", "say hello: /@NAME@ [who]", (args: string) =>
  zx.display(`hello, ${args || "you"} from @NAME@`));

// The schema is built with the SDK's schema builder: zut gets it as JSON
// Schema, the arguments are checked before the handler runs (a bad call
// gets an error result naming the field), and `args` is typed here.
const echoArgs = s.object({ text: s.optional(s.string().describe("what to echo")) });

ext.tool("@TOOL@", "Return the text argument.", echoArgs, (args, ctx) => {
  ctx.progress("echoing"); // tools that take long report progress like this
  return zx.textResult(args.text ?? "");
});

ext.run().catch((err: unknown) => {
  console.error(`@NAME@: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});

// The Node globals this file uses, declared so no @types package is needed.
declare const process: { exitCode?: number };
declare const console: { error(...data: unknown[]): void };
