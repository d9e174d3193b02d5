import { matmul, randn, backends } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { loadHelper } from "../src/index.ts";
import { standin } from "./helpers.ts";

describe("stand-in smoke", () => {
  it("runs matmul", async () => {
    const s = standin();
    if (!s.path) return;
    const st = await loadHelper(s.path);
    console.log(st.reason, st.device, st.implementation);
    expect(backends.mps.isAvailable()).toBe(true);
    const a = randn([3, 4]);
    const b = randn([4, 5]);
    const c = matmul(a.to("mps"), b.to("mps"));
    console.log(c.device, await c.data(), matmul(a, b).dataSync());
  });
});
