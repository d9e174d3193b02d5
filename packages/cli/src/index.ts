/** @backplane/cli as a library: the doctor report and the backend loader the `backplane` command uses. */
export { collectReport, formatReport, type DoctorReport, type NamespaceReport } from "./doctor.ts";
export { KNOWN_BACKEND_PACKAGES, loadInstalledBackends, type BackendLoad } from "./load-backends.ts";
export { explainCall } from "./explain.ts";
