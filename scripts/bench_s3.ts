/**
 * Bench workload 11: the S3 driver against the raw client it is built on, on
 * the same radosgw in the same run, so the ratio is the driver's own cost.
 *
 *   - upload of 100 MiB: S3Store.stage (from a stream of 1 MiB chunks, as a
 *     request body arrives; SHA-256 left for later, as on a first upload) then
 *     commit (server-side copy to the piece key, staging object deleted), vs the
 *     best plain multipart upload aws4fetch can do of the same bytes: already in
 *     memory, parts sent as views without copying, the same part size and parts
 *     in flight, no staging and no copy;
 *   - retrieval of 100 MiB: S3Store.open streamed to the end vs a raw signed GET
 *     streamed to the end.
 *
 * Figures are MB/s (10^6 bytes per second), median of --runs rounds, the two
 * contenders alternating which goes first. --part-sizes also measures uploads
 * at part sizes of 5, 8, 16 and 32 MiB (both contenders), which chose the
 * driver's default part size.
 *
 * The S3 is STORAGE_TEST_S3_ENDPOINT's (with its keys) when set; otherwise a
 * cluster is started here (scripts/lib/radosgw.ts) and stopped at the end. A
 * bucket of its own is made and removed. Without radosgw installed the
 * workload is skipped, and the reason returned (also when it would not start).
 *
 *   deno run -A scripts/bench_s3.ts [--runs 3] [--part-sizes]
 */
import { AwsClient } from "aws4fetch";
import { scriptArgs } from "./lib/args.ts";
import { missingRadosgwBinaries, s3AccessFromEnvironment, startRadosgw } from "./lib/radosgw.ts";
import type { RadosgwCluster, S3Access } from "./lib/radosgw.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { S3_STORE_DEFAULTS, S3Store } from "../src/driver/s3/s3_store.ts";

const MIB = 1024 * 1024;
const SIZE = 100 * MIB;
const PART_SIZES_MIB = [5, 8, 16, 32];

export interface S3BenchOptions {
  runs: number;
  /** Also measure uploads at several part sizes. */
  partSizes?: boolean;
}

export interface S3BenchResult {
  s3: string;
  partSizeMiB: number;
  partConcurrency: number;
  startSeconds: number | null;
  upload100MiB_MBps: { driver: Summary; raw: Summary; ratio: number };
  retrieve100MiB_MBps: { driver: Summary; raw: Summary; ratio: number };
  /** Upload MB/s by part size (MiB), when asked. */
  uploadByPartSize?: Record<string, { driver: Summary; raw: Summary; ratio: number }>;
}

/** Runs workload 11; `{ skipped }` with the reason when no radosgw can be had. */
export async function benchS3(
  options: S3BenchOptions,
): Promise<S3BenchResult | { skipped: string }> {
  const s3 = await s3ForBench();
  if ("skipped" in s3) return s3;
  const { access, cluster } = s3;
  const fromEnvironment = cluster === null;
  const raw = new AwsClient({ ...access, service: "s3", retries: 0 });
  const bucket = `${access.endpoint}/bench-${crypto.randomUUID()}`;
  try {
    await expectOk(await raw.fetch(bucket, { method: "PUT" }), "create the bench bucket");
    const bench = new Contest(access, raw, bucket);
    const defaultPart = S3_STORE_DEFAULTS.partSizeBytes;
    const result: S3BenchResult = {
      s3: fromEnvironment ? access.endpoint : "radosgw, one node, memstore, 127.0.0.1",
      partSizeMiB: S3_STORE_DEFAULTS.partSizeBytes / MIB,
      partConcurrency: S3_STORE_DEFAULTS.partConcurrency,
      startSeconds: cluster ? Math.round(cluster.startMs / 100) / 10 : null,
      upload100MiB_MBps: (await bench.uploads(options.runs, [defaultPart]))[defaultPart / MIB],
      retrieve100MiB_MBps: await bench.retrievals(options.runs),
    };
    if (options.partSizes) {
      result.uploadByPartSize = await bench.uploads(
        options.runs,
        PART_SIZES_MIB.map((mib) => mib * MIB),
      );
    }
    await bench.removeAll();
    return result;
  } finally {
    await raw.fetch(bucket, { method: "DELETE" }).then((r) => r.body?.cancel()).catch(() => {});
    await cluster?.stop();
  }
}

/** A named thing to time; `run` moves SIZE bytes. */
interface Contender {
  name: string;
  run(): Promise<void>;
}

/** The contenders on one bucket, with the 100 MiB they move. */
class Contest {
  readonly #access: S3Access;
  readonly #raw: AwsClient;
  readonly #bucket: string;
  readonly #bytes = new Uint8Array(SIZE);
  readonly #keys = new Set<string>();
  #uploads = 0;

  constructor(access: S3Access, raw: AwsClient, bucket: string) {
    this.#access = access;
    this.#raw = raw;
    this.#bucket = bucket;
    for (let i = 0; i < SIZE; i += 4096) this.#bytes[i] = (i / 4096) & 0xff;
  }

  /** Driver and raw uploads at each part size, all in the same rotated rounds. */
  async uploads(runs: number, partSizes: number[]) {
    const contenders = partSizes.flatMap((partSize) => [
      this.#driverUpload(partSize),
      this.#rawUpload(partSize),
    ]);
    const rates = await this.#rounds(runs, contenders, () => this.removeAll());
    return Object.fromEntries(partSizes.map((partSize) => {
      const driver = summarize(rates[`driver ${partSize}`]);
      const raw = summarize(rates[`raw ${partSize}`]);
      return [partSize / MIB, { driver, raw, ratio: ratioOf(driver, raw) }];
    }));
  }

  async retrievals(runs: number) {
    const store = this.#store(S3_STORE_DEFAULTS.partSizeBytes);
    const staged = await store.stage(ReadableStream.from([this.#bytes]), {
      expectedBytes: SIZE,
      computeSha256: false,
    });
    await staged.commit("benchretrieval");
    this.#keys.add("pieces/benchretrieval");
    const rates = await this.#rounds(runs, [
      {
        name: "driver",
        run: async () => await expectBytes((await store.open("benchretrieval"))!.body, SIZE),
      },
      {
        name: "raw",
        run: async () => {
          const response = await this.#raw.fetch(`${this.#bucket}/pieces/benchretrieval`);
          if (!response.ok) throw new Error(`raw GET: ${response.status}`);
          await expectBytes(response.body!, SIZE);
        },
      },
    ]);
    const driver = summarize(rates.driver);
    const raw = summarize(rates.raw);
    return { driver, raw, ratio: ratioOf(driver, raw) };
  }

  /** Deletes what the rounds stored (memstore holds it in memory until then). */
  async removeAll(): Promise<void> {
    for (const key of this.#keys) {
      await expectOk(await this.#raw.fetch(`${this.#bucket}/${key}`, { method: "DELETE" }), key);
    }
    this.#keys.clear();
  }

  /** S3Store.stage from a stream of 1 MiB chunks, then commit. */
  #driverUpload(partSizeBytes: number): Contender {
    const store = this.#store(partSizeBytes);
    return {
      name: `driver ${partSizeBytes}`,
      run: async () => {
        const cid = `bench${++this.#uploads}x`;
        const chunks = [];
        for (let i = 0; i < SIZE; i += MIB) chunks.push(this.#bytes.subarray(i, i + MIB));
        const staged = await store.stage(ReadableStream.from(chunks), {
          expectedBytes: SIZE,
          computeSha256: false,
        });
        await staged.commit(cid);
        this.#keys.add(`pieces/${cid}`);
      },
    };
  }

  /** The plain multipart upload: views of the bytes as parts, as many in flight as the driver. */
  #rawUpload(partSize: number): Contender {
    const concurrency = S3_STORE_DEFAULTS.partConcurrency;
    return {
      name: `raw ${partSize}`,
      run: async () => {
        const key = `raw/${++this.#uploads}`;
        const url = `${this.#bucket}/${key}`;
        const started = await expectOk(
          await this.#raw.fetch(`${url}?uploads`, { method: "POST" }),
          "raw CreateMultipartUpload",
        );
        const uploadId = encodeURIComponent(/<UploadId>([^<]+)</.exec(started)![1]);
        const etags: string[] = [];
        const partCount = Math.ceil(SIZE / partSize);
        let next = 0;
        const worker = async () => {
          while (next < partCount) {
            const index = next++;
            const body = this.#bytes.subarray(index * partSize, (index + 1) * partSize);
            const response = await this.#raw.fetch(
              `${url}?partNumber=${index + 1}&uploadId=${uploadId}`,
              { method: "PUT", body },
            );
            await expectOk(response, `raw UploadPart ${index + 1}`);
            etags[index] = response.headers.get("etag")!;
          }
        };
        await Promise.all(Array.from({ length: concurrency }, worker));
        const parts = etags.map((etag, i) =>
          `<Part><PartNumber>${i + 1}</PartNumber><ETag>${etag}</ETag></Part>`
        );
        await expectOk(
          await this.#raw.fetch(`${url}?uploadId=${uploadId}`, {
            method: "POST",
            body: `<CompleteMultipartUpload>${parts.join("")}</CompleteMultipartUpload>`,
          }),
          "raw CompleteMultipartUpload",
        );
        this.#keys.add(key);
      },
    };
  }

  /**
   * MB/s of each contender per round, in a different order each round (A B C,
   * B C A, …) so drift (memstore filling, radosgw's garbage collection) hits
   * all alike; `between` runs untimed after each.
   */
  async #rounds(runs: number, contenders: Contender[], between?: () => Promise<void>) {
    const rates: Record<string, number[]> = {};
    for (const contender of contenders) rates[contender.name] = [];
    for (let round = 0; round < runs; round++) {
      const shift = round % contenders.length;
      for (const contender of [...contenders.slice(shift), ...contenders.slice(0, shift)]) {
        const started = performance.now();
        await contender.run();
        rates[contender.name].push(SIZE / 1e6 / ((performance.now() - started) / 1000));
        await between?.();
      }
    }
    return rates;
  }

  #store(partSizeBytes: number): S3Store {
    return new S3Store({ ...this.#access, bucket: this.#bucket.split("/").pop()!, partSizeBytes });
  }
}

function ratioOf(driver: Summary, raw: Summary): number {
  return Math.round((driver.median / raw.median) * 100) / 100;
}

async function expectBytes(body: ReadableStream<Uint8Array>, size: number): Promise<void> {
  let read = 0;
  for await (const chunk of body) read += chunk.byteLength;
  if (read !== size) throw new Error(`read ${read} of ${size} bytes`);
}

async function expectOk(response: Response, what: string): Promise<string> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${what}: ${response.status} ${text.slice(0, 300)}`);
  return text;
}

/**
 * The S3 a bench workload uses: STORAGE_TEST_S3_ENDPOINT's (and its keys) when
 * set, else a radosgw cluster of its own (16 GiB memstore; the caller stops
 * it), or `{ skipped }` with why there is none.
 */
export async function s3ForBench(): Promise<
  { access: S3Access; cluster: RadosgwCluster | null } | { skipped: string }
> {
  const fromEnvironment = s3AccessFromEnvironment();
  if (fromEnvironment !== null) return { access: fromEnvironment, cluster: null };
  const missing = missingRadosgwBinaries();
  if (missing.length > 0) {
    const install = "apt-get install radosgw ceph-mon ceph-osd ceph-common";
    return { skipped: `${missing.join(", ")} not installed (${install})` };
  }
  try {
    const cluster = await startRadosgw({ memstoreBytes: 16 * 1024 * MIB });
    return { access: cluster, cluster };
  } catch (error) {
    return { skipped: `radosgw did not start: ${(error as Error).message}` };
  }
}

if (import.meta.main) {
  const opts = scriptArgs("Usage: deno run -A scripts/bench_s3.ts [--runs 3] [--part-sizes]", {
    runs: { type: "number", default: 3, integer: true, min: 1 },
    "part-sizes": { type: "boolean" },
  });
  const result = await benchS3({ runs: opts.runs, partSizes: opts["part-sizes"] });
  console.log(JSON.stringify(result, null, 2));
}
