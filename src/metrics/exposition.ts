/**
 * The Prometheus text exposition format, version 0.0.4: how names, label
 * values, help texts and numbers are written. Kept apart from the registry so
 * the escaping rules live in one place and are tested on their own; the
 * registry renders each series' label set once, when the series is made, so a
 * scrape only joins strings that already exist.
 *
 * https://prometheus.io/docs/instrumenting/exposition_formats/
 */

/** What GET /metrics answers with. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type MetricType = "counter" | "gauge" | "histogram";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Throws unless name is a valid metric name. */
export function checkMetricName(name: string): void {
  if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name: ${name}`);
}

/** Throws unless every name is a valid label name (names starting with __ are Prometheus's). */
export function checkLabelNames(names: readonly string[]): void {
  for (const name of names) {
    if (!LABEL_NAME.test(name) || name.startsWith("__")) {
      throw new Error(`invalid label name: ${name}`);
    }
  }
}

/** A label value inside double quotes: backslash, double quote and newline are escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => c === "\n" ? "\\n" : `\\${c}`);
}

/** A HELP text: backslash and newline are escaped (double quotes are not). */
export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => c === "\n" ? "\\n" : "\\\\");
}

/** `{a="x",b="y"}`, or "" for no labels. */
export function labelSet(names: readonly string[], values: readonly string[]): string {
  if (names.length !== values.length) {
    throw new Error(`expected ${names.length} label values, got ${values.length}`);
  }
  if (names.length === 0) return "";
  return `{${names.map((name, i) => `${name}="${escapeLabelValue(values[i])}"`).join(",")}}`;
}

/** A sample value as Prometheus parses it (Go's ParseFloat, plus +Inf, -Inf and NaN). */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/** The HELP and TYPE lines that open a family. */
export function familyHeader(name: string, help: string, type: MetricType): string {
  return `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`;
}
