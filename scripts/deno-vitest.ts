// Deno runs the same test files as vitest and bun: the `vitest` import maps here
// (deno.json). describe/it come from Deno's node:test, expect from jest's `expect`.
export { describe, it, it as test, before as beforeAll, after as afterAll, beforeEach, afterEach } from "node:test";
export { expect } from "expect";
