/**
 * The instruments the service counts with, and the registry that renders them
 * for a scrape. Built for a hot path that pays almost nothing: a series (one
 * set of label values) is an object made once, whose label text is rendered
 * once, and that callers keep; counting is `series.inc()` on a plain number,
 * observing a latency is a short scan of a bucket array. Everything else
 * (joining the text, reading gauges) happens when Prometheus scrapes.
 *
 * Three kinds of family: counters and histograms, which requests push into,
 * and collected families (gauges, or counters kept elsewhere), read from
 * their source at scrape time.
 */
import {
  checkLabelNames,
  checkMetricName,
  familyHeader,
  formatValue,
  labelSet,
} from "./exposition.ts";

export interface FamilyOptions {
  /** storage_… with the unit and, for counters, _total (Prometheus naming). */
  name: string;
  help: string;
  labelNames?: readonly string[];
}

interface MetricFamily {
  readonly name: string;
  render(): string | Promise<string>;
}

/** One counter series: add to `value` through inc(). */
export class CounterSeries {
  value = 0;
  /** The rendered label set, e.g. `{route="/p/:cid",status="200"}`. */
  readonly labels: string;

  constructor(labels: string) {
    this.labels = labels;
  }

  inc(by = 1): void {
    this.value += by;
  }
}

/** Label values → series, each series made (and its label text rendered) once. */
class SeriesTable<S> {
  readonly #labelNames: readonly string[];
  readonly #make: (labels: readonly string[]) => S;
  readonly #series = new Map<string, S>();

  constructor(labelNames: readonly string[], make: (labels: readonly string[]) => S) {
    checkLabelNames(labelNames);
    this.#labelNames = labelNames;
    this.#make = make;
  }

  get labelNames(): readonly string[] {
    return this.#labelNames;
  }

  get(values: readonly string[]): S {
    const key = JSON.stringify(values);
    let series = this.#series.get(key);
    if (series === undefined) {
      if (values.length !== this.#labelNames.length) {
        throw new Error(`expected ${this.#labelNames.length} label values, got ${values.length}`);
      }
      series = this.#make(values);
      this.#series.set(key, series);
    }
    return series;
  }

  values(): IterableIterator<S> {
    return this.#series.values();
  }
}

export class Counter implements MetricFamily {
  readonly name: string;
  readonly #help: string;
  readonly #table: SeriesTable<CounterSeries>;

  constructor(options: FamilyOptions) {
    if (!options.name.endsWith("_total")) throw new Error(`counter ${options.name} needs _total`);
    this.name = options.name;
    this.#help = options.help;
    const names = options.labelNames ?? [];
    this.#table = new SeriesTable(names, (values) => new CounterSeries(labelSet(names, values)));
  }

  /** The series of these label values (in labelNames order); keep it to count on a hot path. */
  series(...values: string[]): CounterSeries {
    return this.#table.get(values);
  }

  render(): string {
    let text = familyHeader(this.name, this.#help, "counter");
    for (const series of this.#table.values()) {
      text += `${this.name}${series.labels} ${formatValue(series.value)}\n`;
    }
    return text;
  }
}

/** One histogram series: observations counted per bucket, their sum and count. */
export class HistogramSeries {
  readonly #bounds: readonly number[];
  /** Per bucket, not cumulative; the last one counts observations above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  /** The label text of each bucket, `le` last; +Inf at the end. */
  readonly bucketLabels: readonly string[];
  /** The label text of _sum and _count. */
  readonly labels: string;

  constructor(bounds: readonly number[], labelNames: readonly string[], values: readonly string[]) {
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
    this.labels = labelSet(labelNames, values);
    const withLe = [...labelNames, "le"];
    this.bucketLabels = [...bounds.map(formatValue), "+Inf"].map((le) =>
      labelSet(withLe, [...values, le])
    );
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    // Most observations are small: a scan from the lowest bucket ends at once for them.
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
  }

  get count(): number {
    let count = 0;
    for (const n of this.counts) count += n;
    return count;
  }
}

export interface HistogramOptions extends FamilyOptions {
  /** Upper bounds of the buckets, ascending; +Inf is added. */
  buckets: readonly number[];
}

export class Histogram implements MetricFamily {
  readonly name: string;
  readonly #help: string;
  readonly #table: SeriesTable<HistogramSeries>;

  constructor(options: HistogramOptions) {
    const { buckets } = options;
    if (buckets.length === 0 || buckets.some((b, i) => i > 0 && b <= buckets[i - 1])) {
      throw new Error(`histogram ${options.name}: buckets must ascend`);
    }
    const names = options.labelNames ?? [];
    if (names.includes("le")) throw new Error(`histogram ${options.name}: "le" is reserved`);
    this.name = options.name;
    this.#help = options.help;
    this.#table = new SeriesTable(names, (values) => new HistogramSeries(buckets, names, values));
  }

  series(...values: string[]): HistogramSeries {
    return this.#table.get(values);
  }

  render(): string {
    let text = familyHeader(this.name, this.#help, "histogram");
    for (const series of this.#table.values()) {
      let cumulative = 0;
      series.counts.forEach((n, i) => {
        cumulative += n;
        text += `${this.name}_bucket${series.bucketLabels[i]} ${cumulative}\n`;
      });
      text += `${this.name}_sum${series.labels} ${formatValue(series.sum)}\n`;
      text += `${this.name}_count${series.labels} ${cumulative}\n`;
    }
    return text;
  }
}

/** One sample of a collected family: label values in labelNames order. */
export interface CollectedSample {
  labels?: readonly string[];
  value: number;
}

export interface CollectedOptions extends FamilyOptions {
  type: "gauge" | "counter";
  /** Read at each scrape. Throwing (or rejecting) leaves the family without samples. */
  collect(): readonly CollectedSample[] | Promise<readonly CollectedSample[]>;
}

/** A family read from its source at scrape time: gauges, or totals another object keeps. */
export class CollectedFamily implements MetricFamily {
  readonly name: string;
  readonly #options: CollectedOptions;
  readonly #labelNames: readonly string[];

  constructor(options: CollectedOptions) {
    if (options.type === "counter" && !options.name.endsWith("_total")) {
      throw new Error(`counter ${options.name} needs _total`);
    }
    this.#labelNames = options.labelNames ?? [];
    checkLabelNames(this.#labelNames);
    this.name = options.name;
    this.#options = options;
  }

  async render(): Promise<string> {
    const { name, help, type } = this.#options;
    let samples: readonly CollectedSample[];
    try {
      samples = await this.#options.collect();
    } catch {
      // One source that cannot be read (a busy database) must not cost the whole scrape.
      samples = [];
    }
    let text = familyHeader(name, help, type);
    for (const sample of samples) {
      text += `${name}${labelSet(this.#labelNames, sample.labels ?? [])} ${
        formatValue(sample.value)
      }\n`;
    }
    return text;
  }
}

/** The families of one server, rendered in the order they were added. */
export class MetricsRegistry {
  readonly #families: MetricFamily[] = [];

  counter(options: FamilyOptions): Counter {
    return this.#add(new Counter(options));
  }

  histogram(options: HistogramOptions): Histogram {
    return this.#add(new Histogram(options));
  }

  collected(options: CollectedOptions): CollectedFamily {
    return this.#add(new CollectedFamily(options));
  }

  /** The whole exposition, as GET /metrics answers it. */
  async render(): Promise<string> {
    const texts = await Promise.all(this.#families.map((family) => family.render()));
    return texts.join("");
  }

  #add<F extends MetricFamily>(family: F): F {
    checkMetricName(family.name);
    if (this.#families.some((f) => f.name === family.name)) {
      throw new Error(`metric ${family.name} is registered twice`);
    }
    this.#families.push(family);
    return family;
  }
}
