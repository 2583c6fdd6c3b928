/**
 * Self-signed TLS pairs for 127.0.0.1, made with openssl (a Debian package
 * CI installs), and the files a server reads them from.
 */
import { openssl } from "./openssl.ts";

/** A certificate (self-signed, for 127.0.0.1) and its key, as PEM text. */
export interface Pair {
  cert: string;
  key: string;
  /** As X509Certificate.serialNumber prints it. */
  serial: string;
}

/** A fresh key and a certificate for 127.0.0.1 with the given serial, made by openssl. */
export async function makePair(serial: number): Promise<Pair> {
  const dir = await Deno.makeTempDir({ prefix: "tls-pair-" });
  try {
    await openssl(
      "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes " +
        `-keyout ${dir}/key.pem -out ${dir}/cert.pem -days 2 -set_serial ${serial} ` +
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost " +
        // A CA certificate is not accepted as a server's own (rustls: CaUsedAsEndEntity).
        "-addext basicConstraints=critical,CA:FALSE -addext extendedKeyUsage=serverAuth",
    );
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
      serial: serial.toString(16).toUpperCase().padStart(2, "0"),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Where the server reads its pair from, in a temp directory of its own. */
export interface PairFiles extends AsyncDisposable {
  certFile: string;
  keyFile: string;
  args: string[];
  /** Replaces both files as certbot does: write beside, rename over. */
  install(cert: string, key: string): Promise<void>;
}

export async function pairFiles(pair: Pair): Promise<PairFiles> {
  const dir = await Deno.makeTempDir({ prefix: "tls-files-" });
  const certFile = `${dir}/fullchain.pem`;
  const keyFile = `${dir}/privkey.pem`;
  const replace = async (path: string, text: string) => {
    await Deno.writeTextFile(`${path}.new`, text);
    await Deno.rename(`${path}.new`, path);
  };
  const files: PairFiles = {
    certFile,
    keyFile,
    args: ["--tls-cert", certFile, "--tls-key", keyFile],
    async install(cert, key) {
      await replace(certFile, cert);
      await replace(keyFile, key);
    },
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
    },
  };
  await files.install(pair.cert, pair.key);
  return files;
}
