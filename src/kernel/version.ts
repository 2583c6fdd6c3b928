/**
 * The service's version, in one place: the start-up log line names it, so an
 * operator reading a log (or a bug report) knows which build wrote it. There
 * is no package manifest to read it from; bump it with each release.
 */
export const VERSION = "0.14.0";
