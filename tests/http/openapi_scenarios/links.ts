/**
 * Declared-codes scenarios (see scenario.ts) of signed upload links: minting
 * one (POST /api/upload-links) and the one upload it allows (POST
 * /api/upload-links/{link}). The link's upload is POST /api/upload's intake
 * and body checks with its terms fixed: the checks only it makes are
 * provoked here, the shared ones on upload (uploads.ts).
 */
import { assertEquals } from "../../helpers/assert.ts";
import { CAR_TYPE, linkedCar } from "../../helpers/ipfs.ts";
import type { Answer, Probe } from "../openapi_probe.ts";
import {
  bearer,
  jsonBodyScenarios,
  postJson,
  rawPost,
  tokenScenarios,
  wrongMethod,
} from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

const LINK_CID = "bafkscenariolink";
const TERMS = { cid: LINK_CID, size: 5, contentType: "text/plain" };
/** The PieceCIDv2 of "hello" (5 bytes). */
const HELLO_PIECE_CID = "bafkzcibcpibfj7zrbb6q2hxmujslf6yo7ticj5tvto2wa23rhmw27cllg57dcfq";

/** A link for TERMS (or others) from a new user's token. */
async function linkOf(p: Probe, terms: Record<string, unknown> = TERMS): Promise<string> {
  const answer = await postJson(p, "/api/upload-links", terms, bearer(await p.token()));
  assertEquals(answer.status, 201, answer.body);
  return new URL(JSON.parse(answer.body).url).pathname;
}

const mint = (name: string, terms: Record<string, unknown>, answer: string): Scenario => {
  const [status, code] = answer.split(" ");
  return {
    name,
    send: async (p) => postJson(p, "/api/upload-links", terms, bearer(await p.token())),
    status: Number(status),
    code,
  };
};

/** A scenario of a new link's upload, sent by `send` to the link's path. */
const throughLink = (
  name: string,
  answer: string,
  send: (p: Probe, path: string) => Promise<Answer>,
  { terms = TERMS, args }: { terms?: Record<string, unknown>; args?: string[] } = {},
): Scenario => {
  const [status, code] = answer.split(" ");
  return {
    name,
    args,
    send: async (p) => send(p, await linkOf(p, terms)),
    status: Number(status),
    code,
  };
};

const sendText = (p: Probe, path: string, body: string, type = "text/plain") =>
  p.send("POST", path, { headers: { "content-type": type }, body });

export const scenarios: Record<string, Scenario[]> = {
  createUploadLink: [
    mint("a cid, a size and a type", TERMS, "201"),
    mint("a malformed cid", { ...TERMS, cid: "x" }, "400 invalid_cid"),
    mint("a size of 0", { ...TERMS, size: 0 }, "400 invalid_request"),
    mint(
      "a form as the type",
      { ...TERMS, contentType: "multipart/form-data" },
      "400 invalid_content_type",
    ),
    mint(
      "a name with a control character",
      { ...TERMS, filename: "a\u0001" },
      "400 invalid_filename",
    ),
    mint(
      "a PieceCIDv2 of another size",
      { ...TERMS, cid: HELLO_PIECE_CID, size: 6 },
      "400 cid_mismatch",
    ),
    ...tokenScenarios("POST", "/api/upload-links", {
      scope: "put",
      body: () => ({
        headers: { "content-type": "application/json" },
        body: JSON.stringify(TERMS),
      }),
    }),
    wrongMethod("GET", "/api/upload-links"),
    ...jsonBodyScenarios("/api/upload-links", { withToken: true }),
  ],
  uploadThroughLink: [
    throughLink("its own bytes", "200", (p, path) => sendText(p, path, "hello")),
    throughLink("a second use", "401 invalid_link", async (p, path) => {
      assertEquals((await sendText(p, path, "hello")).status, 200);
      return sendText(p, path, "hello");
    }),
    throughLink(
      "another type",
      "401 invalid_link",
      (p, path) => sendText(p, path, "hello", "text/html"),
    ),
    {
      name: "a link never minted",
      send: (p) => sendText(p, `/api/upload-links/${"A".repeat(43)}`, "hello"),
      status: 401,
      code: "invalid_link",
    },
    throughLink(
      "bytes that are not the cid's",
      "400 cid_mismatch",
      (p, path) => sendText(p, path, "hellp"),
      { terms: { ...TERMS, cid: HELLO_PIECE_CID } },
    ),
    throughLink("no Content-Length", "400 no_body", (p, path) => p.raw(rawPost(path, ""))),
    throughLink(
      "Content-Length: 0",
      "400 empty_bodyy",
      (p, path) => p.raw(rawPost(path, "Content-Length: 0\n")),
    ),
    throughLink(
      "a Content-Length past what a number holds exactly",
      "400 invalid_request",
      (p, path) => p.raw(rawPost(path, "Content-Length: 9007199254740993\n"), { body: "x" }),
    ),
    throughLink(
      "chunked",
      "411 length_required",
      (p, path) =>
        p.raw(rawPost(path, "Transfer-Encoding: chunked\n"), { body: "5\r\nhello\r\n0\r\n\r\n" }),
    ),
    throughLink(
      "an X-Filename that does not decode",
      "400 invalid_filename",
      (p, path) =>
        p.send("POST", path, {
          headers: { "content-type": "text/plain", "x-filename": "%E0%A4%A" },
          body: "hello",
        }),
    ),
    throughLink(
      "a body cut short",
      "400 incomplete_body",
      (p, path) =>
        p.raw(rawPost(path, "Content-Type: text/plain\nContent-Length: 5\n"), {
          body: "he",
          closeWrite: true,
        }),
    ),
    throughLink(
      "a body that stalls",
      "408 request_timeout",
      (p, path) =>
        p.raw(rawPost(path, "Content-Type: text/plain\nContent-Length: 5\n"), { body: "he" }),
      { args: ["--body-idle-timeout", "1"] },
    ),
    {
      name: "a CAR of more blocks than the owner's tier allows",
      args: ["--car-max-blocks", "2"],
      send: async (p) => {
        const { car } = await linkedCar(2);
        const path = await linkOf(p, { cid: LINK_CID, size: car.length, contentType: CAR_TYPE });
        return p.send("POST", path, { headers: { "content-type": CAR_TYPE }, body: car });
      },
      status: 413,
      code: "too_many_blocks",
    },
    wrongMethod("GET", `/api/upload-links/${"A".repeat(43)}`),
  ],
};

/** The intake and body checks the link's upload shares with POST /api/upload, provoked there. */
const SHARED_WITH_UPLOAD = "the intake and body checks of POST /api/upload, which the link's " +
  "upload runs as they are (provoked on upload, in uploads.ts)";

export const outOfReach: OutOfReach = {
  uploadThroughLink: Object.fromEntries(
    [
      "400 invalid_car",
      "400 invalid_manifest",
      "400 manifest_incomplete",
      "409 cid_conflict",
      "413 too_large",
      "429 rate_limited",
      "429 quota_exceeded",
      "502 stage_failed",
      "503 server_busy",
      "503 wallet_unavailable",
      "507 insufficient_storage",
    ].map((answer) => [answer, SHARED_WITH_UPLOAD]),
  ),
};
