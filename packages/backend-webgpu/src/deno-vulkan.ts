/**
 * Deno's WebGPU (wgpu) opens every graphics API it knows the first time it looks for
 * adapters, OpenGL through EGL included, even when the adapter it returns is Vulkan's. On
 * Linux that EGL is libglvnd, whose destructor at process exit frees per-thread state
 * while a thread that made EGL calls may still be ending and freeing its own: glibc then
 * aborts the finished process ("double free or corruption (out)", "corrupted size vs.
 * prev_size"; about one Deno run in 12 to 20 with Mesa, every test passed). Deno is asked
 * for Vulkan only (DENO_WEBGPU_BACKEND=vulkan) before its first adapter request, so EGL is
 * never loaded. A value the user set wins.
 */
import { runtime } from "@backplane/core";

/** Where the Vulkan loader looks for drivers' manifests (the Linux defaults). */
const ICD_DIRS = ["/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d"];

interface DenoEnvFs {
  env: { get(name: string): string | undefined; set(name: string, value: string): void };
  readDirSync(path: string): Iterable<{ name: string }>;
}

/** Whether a Vulkan driver is declared: a VK_ICD_FILENAMES / VK_DRIVER_FILES list or a manifest. */
function vulkanDriverDeclared(deno: DenoEnvFs): boolean {
  if (deno.env.get("VK_ICD_FILENAMES") || deno.env.get("VK_DRIVER_FILES")) return true;
  const dataDirs = (deno.env.get("XDG_DATA_DIRS") ?? "").split(":").filter(Boolean);
  for (const dir of [...ICD_DIRS, ...dataDirs.map((d) => `${d}/vulkan/icd.d`)]) {
    try {
      for (const e of deno.readDirSync(dir)) if (e.name.endsWith(".json")) return true;
    } catch {
      // absent or unreadable: the next directory
    }
  }
  return false;
}

/**
 * On Deno on Linux, before the first navigator.gpu.requestAdapter(): asks for Vulkan only,
 * unless the user chose a backend. OpenGL is left out by default even where no Vulkan driver
 * is installed: it loads EGL (the crash above), and on a machine without a GPU it is Mesa's
 * llvmpipe, slower than the CPU backends (a kernel test file took 2.5 minutes there, 10 s on
 * lavapipe, Mesa's Vulkan driver). Returns what it did, for the reason given when no adapter
 * is found (undefined: nothing changed).
 */
export function preferVulkanOnDeno(): string | undefined {
  const rt = runtime();
  if (rt.name !== "deno" || rt.platform !== "linux") return undefined;
  const deno = (globalThis as { Deno?: DenoEnvFs }).Deno;
  let driver: boolean;
  try {
    if (!deno || deno.env.get("DENO_WEBGPU_BACKEND") !== undefined) return undefined;
    driver = vulkanDriverDeclared(deno);
    deno.env.set("DENO_WEBGPU_BACKEND", "vulkan");
  } catch {
    return undefined; // no --allow-env / --allow-read: Deno's own choice stands
  }
  const why =
    "Deno's OpenGL path loads EGL, which can crash the process at exit; set DENO_WEBGPU_BACKEND=gl to use OpenGL";
  return driver
    ? `backend-webgpu asked Deno for Vulkan only (${why})`
    : `no Vulkan driver is installed (apt-get install mesa-vulkan-drivers, or your GPU's Vulkan driver) and backend-webgpu asked Deno for Vulkan only (${why})`;
}
