/** The core's version, kept in step with package.json by the release script. */
export const version = "0.1.0";
