console.log("start");
const { withRecording, SM80 } = await import("../../packages/backend-cuda/test/helpers.ts");
console.log("helpers");
const { deviceChecks } = await import("./device-checks.ts");
console.log("checks");
const { runTimings } = await import("./timings.ts");
console.log("imports done");
await withRecording({ devices: [SM80] } as never, async () => {
  console.log("in recording");
  for (const c of await deviceChecks()) console.log(c.ok, c.name, c.detail.slice(0, 300));
  await runTimings({ quick: true, log: (l) => console.log(l.slice(0, 200)) });
});
