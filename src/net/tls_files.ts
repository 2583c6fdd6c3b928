/**
 * The certificate and key files HTTPS is served with (--tls-cert, --tls-key):
 * read them, check that they can be served before anything uses them, and
 * notice when they change on disk, because certificates are renewed in place
 * (certbot swaps the files, or the symlinks to them, by atomic rename) and
 * the server must pick the new pair up without a restart.
 *
 * A pair is checked here with node:crypto (a certificate, a private key, and
 * the key is the certificate's) so that a bad pair is refused with an error
 * that names the file, at start-up and at every reload, instead of surfacing
 * as a failed bind or failed handshakes.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";

/**
 * Certificate and key files (PEM) when the server terminates TLS itself
 * (--tls-cert, --tls-key). Defined here, beside the code that reads them, so
 * net/ needs nothing from the config module that fills it in.
 */
export interface TlsConfig {
  certFile: string;
  keyFile: string;
}

/** A pair of files that cannot be served; the message names the flag and the file. */
export class TlsFilesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TlsFilesError";
  }
}

/** What the logs say about a certificate: enough to tell two renewals apart. */
export interface CertificateSummary {
  subject: string;
  serial: string;
  /** Expiry, ISO 8601. */
  notAfter: string;
}

/** A checked pair, as PEM text ready for Deno.serve. */
export interface TlsPair {
  cert: string;
  key: string;
  certificate: CertificateSummary;
  /** The files' fingerprint taken before they were read: a later change differs from it. */
  fingerprint: string;
}

/** Reads both files and checks the pair; throws TlsFilesError naming what is wrong. */
export async function readTlsPair(files: TlsConfig): Promise<TlsPair> {
  const fingerprint = await tlsFilesFingerprint(files);
  const cert = await readPem(files.certFile, "--tls-cert");
  const key = await readPem(files.keyFile, "--tls-key");
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    throw new TlsFilesError(`--tls-cert ${files.certFile} holds no PEM certificate`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsFilesError(`--tls-key ${files.keyFile} holds no PEM private key`);
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new TlsFilesError(
      `--tls-key ${files.keyFile} is not the key of the certificate in --tls-cert ${files.certFile}`,
    );
  }
  return {
    cert,
    key,
    fingerprint,
    certificate: {
      subject: certificate.subject.replaceAll("\n", ", "),
      serial: certificate.serialNumber,
      notAfter: certificate.validToDate.toISOString(),
    },
  };
}

async function readPem(path: string, flag: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    // NotCapable's message names the permission flag to add (--allow-read).
    throw new TlsFilesError(`${flag} ${path}: cannot read it: ${firstLine(error as Error)}`);
  }
}

function firstLine(error: Error): string {
  return error.message.split("\n")[0];
}

/**
 * What changes when either file is replaced: inode, size and modification time
 * of each (following symlinks, as certbot's live/ directory is made of them).
 * A file that cannot be stat'ed is part of the fingerprint too, as missing.
 */
export async function tlsFilesFingerprint(files: TlsConfig): Promise<string> {
  const one = async (path: string) => {
    try {
      const info = await Deno.stat(path);
      return `${info.ino}:${info.size}:${info.mtime?.getTime()}`;
    } catch (error) {
      return `missing:${(error as Error).name}`;
    }
  };
  return `${await one(files.certFile)}|${await one(files.keyFile)}`;
}

export interface TlsFilesWatchOptions {
  files: TlsConfig;
  /** The pair in use now. */
  current: TlsPair;
  intervalMs: number;
  /** A new pair that checks out; the watch waits for it before polling again. */
  onPair(pair: TlsPair): Promise<void>;
  /** A change that cannot be used (logged once per change); the pair in use stays. */
  onRejected(error: Error): void;
}

/**
 * Polls the two files every intervalMs (polling survives atomic renames and
 * symlink swaps, which file watchers can miss). A change is acted on once it
 * has held for one interval, so a renewal that replaces the certificate and
 * the key one after the other is read as one new pair, not as a transient
 * mismatch. Returns stop(), which resolves once a reload under way is done.
 */
export function watchTlsFiles(options: TlsFilesWatchOptions): { stop(): Promise<void> } {
  let current = options.current.fingerprint;
  let seen = current;
  let rejected: string | null = null;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;

  const poll = async () => {
    const now = await tlsFilesFingerprint(options.files);
    if (now !== seen) {
      seen = now; // changed: wait one interval for the rest of the renewal
      return;
    }
    if (now === current || now === rejected || stopped) return;
    try {
      const pair = await readTlsPair(options.files);
      await options.onPair(pair);
      // A change made while the pair was read differs from its fingerprint: the next poll.
      current = pair.fingerprint;
      rejected = null;
    } catch (error) {
      rejected = now;
      options.onRejected(error as Error);
    }
  };
  // The next poll is timed from the end of the last: a reload may take a while.
  const schedule = () => {
    timer = setTimeout(() => {
      running = poll().finally(() => stopped || schedule());
    }, options.intervalMs);
    Deno.unrefTimer(timer);
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
