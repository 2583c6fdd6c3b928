/**
 * The hand-off's bodies (docs/handoff.md): a piece's `handoff` on a deal or an
 * upload result, and the hand-off in /healthz. Sent only by a server that
 * hands pieces to a storage provider (--handoff pdp).
 */
import { HANDOFF_STATES } from "../../../kernel/wire.ts";
import {
  booleanSchema,
  dateTimeSchema,
  enumOf,
  integerSchema,
  nullable,
  objectOf,
  stringSchema,
  uriSchema,
} from "./json_schema.ts";
import type { JsonSchema } from "./json_schema.ts";

/** A piece's hand-off to the storage provider (only with --handoff pdp). */
export const handoffSchema: JsonSchema = objectOf({
  state: {
    ...enumOf(HANDOFF_STATES),
    description: "queued, pulling, adding, live (proven on chain), failed, ineligible, " +
      "removing, removed",
  },
  provider: { ...uriSchema, description: "The provider's service URL" },
  pieceCid: { ...nullable(stringSchema), description: "The PieceCIDv2 the provider knows it by" },
  dataSetId: { ...nullable(stringSchema), description: "The on-chain data set (decimal)" },
  pieceId: {
    ...nullable(stringSchema),
    description: "The piece's id in the data set (decimal): with dataSetId, its on-chain identity",
  },
  txHash: {
    ...nullable(stringSchema),
    description: "The transaction that added it, or that scheduled its removal",
  },
  error: { ...nullable(stringSchema), description: "What is known of why it failed" },
  updatedAt: dateTimeSchema,
});

export const handoffHealthSchema: JsonSchema = {
  ...objectOf({
    provider: uriSchema,
    answering: { ...booleanSchema, description: "Whether it answered the last run" },
    lastAnswerAt: nullable(dateTimeSchema),
    problem: {
      ...nullable(stringSchema),
      description: "The last failure to reach it, while it lasts",
    },
    pieces: {
      type: "object",
      additionalProperties: integerSchema,
      description: "Pieces by hand-off state",
    },
    oldestQueuedAt: nullable(dateTimeSchema),
  }),
  description: "With a hand-off to a storage provider (--handoff pdp) only",
};
