/**
 * backends.cuda.status().detail: the search report behind a "not found" reason (every path
 * tried) reaches the namespace's status, not only cudaStatus().
 */
import { backends } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { cudaStatus } from "../src/internals.ts";

const st = cudaStatus();
// Only where the driver library was not found (this repository's CI) is there a search report.
const itNotFound = st.detail?.includes("tried:") ? it : it.skip;

describe("backends.cuda.status() carries the probe's detail", () => {
  itNotFound("detail lists the paths tried for the driver library", () => {
    const s = backends.cuda.status();
    expect(s.available).toBe(false);
    expect(s.detail).toBe(st.detail);
    expect(s.detail).toMatch(/(libcuda\.so\.1|nvcuda\.dll) not found \(tried: /);
  });

  itNotFound(
    "cusparselt's status carries the same report, and cuSPARSELt's own when missing",
    () => {
      const s = backends.cusparselt.status();
      expect(s.available).toBe(false);
      expect(s.detail).toContain(st.detail as string);
      if (!st.cusparseLt.path) expect(s.detail).toMatch(/cusparseLt.*not found \(tried: /i);
    },
  );
});
