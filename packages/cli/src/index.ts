/** @backplane/cli as a library: the doctor report and the backend loader the `backplane` command uses. */
export { collectReport, type DoctorReport, formatReport, type NamespaceReport } from "./doctor.ts";
export { explainCall } from "./explain.ts";
export {
  type BackendLoad,
  KNOWN_BACKEND_PACKAGES,
  loadInstalledBackends,
} from "./load-backends.ts";
