/** The lifecycle suite (lifecycle_suite.ts) on a data directory: SQLite and pieces on disk. */
import { startTestServer } from "../helpers/server.ts";
import { runLifecycleSuite } from "./lifecycle_suite.ts";

runLifecycleSuite("sqlite + disk", (options) => startTestServer(options));
