/// <reference lib="dom" />
/**
 * Asking before sending: GET /api/limits?size=N says whether a file fits the
 * caller's per-file cap and what is left of today's cap. This turns that
 * answer into a decision and words. A file over the per-file cap is not
 * refused: the SDK splits it into pieces plus a manifest (as it does any file
 * over 100 MiB), so then only the daily cap can stop it.
 */
import { DEFAULT_PIECE_SIZE, planPieces } from "../../sdk/mod.ts";
import type { Limits, Tier } from "../../sdk/mod.ts";
import { formatBytes, formatDuration, formatTime } from "./format.ts";

export interface Admission {
  /** Whether to send the file. */
  send: boolean;
  /** Why not, or what will happen (it is split); null when there is nothing to say. */
  text: string | null;
  /** Pieces it is sent as (1: not split). */
  pieces: number;
}

const DAILY_CAP_NAMES: Record<Tier, string> = {
  sponsored: "the daily allowance for uploads without an account from your network address",
  token: "your daily upload quota",
  wallet: "the daily allowance your wallet's balance gives",
};

export function admissionOf(limits: Limits, size: number): Admission {
  const pieces = planPieces(size, limits.maxFileBytes, DEFAULT_PIECE_SIZE).length;
  if (limits.reason === "insufficient_scope") {
    return {
      send: false,
      text: "Not sent: this token may not upload (it lacks the “put” permission). " +
        "Sign in with a token that has it, or sign out to upload without an account.",
      pieces,
    };
  }
  if (size > limits.remainingTodayBytes) {
    const cap = `${DAILY_CAP_NAMES[limits.tier]} (${formatBytes(limits.dailyCapBytes)})`;
    const why = size > limits.dailyCapBytes
      ? `more than ${cap} allows in a whole day.`
      : `but only ${formatBytes(limits.remainingTodayBytes)} is left today of ${cap}. ` +
        `It renews at ${formatTime(limits.resetsAt)} (in ${formatDuration(limits.resetSeconds)}).`;
    const more = limits.tier === "sponsored" ? " With a token you can upload more." : "";
    return {
      send: false,
      text: `Not sent: this file is ${formatBytes(size)}, ${why}${more}`,
      pieces,
    };
  }
  if (pieces > 1) {
    const limit = limits.maxFileBytes !== null && limits.maxFileBytes < DEFAULT_PIECE_SIZE
      ? `the ${formatBytes(limits.maxFileBytes)} per-file limit`
      : `${formatBytes(DEFAULT_PIECE_SIZE)}`;
    return {
      send: true,
      text: `Larger than ${limit}, so it is sent as ${pieces} pieces plus a small manifest ` +
        "that lists them. The link serves the whole file, its pieces one after the other.",
      pieces,
    };
  }
  return { send: true, text: null, pieces };
}

/** One line about what an upload in this tier gets, for the upload panel. */
export function tierSummary(limits: Limits): string {
  const tier = limits.tiers.find((entry) => entry.tier === limits.tier);
  const kept = tier ? `, kept for ${tier.termDays} days` : "";
  const perFile = limits.maxFileBytes === null
    ? "any size"
    : `up to ${formatBytes(limits.maxFileBytes)} a file (larger files are split)`;
  const who = limits.tier === "sponsored"
    ? "Without an account"
    : limits.tier === "wallet"
    ? "With your wallet"
    : "With your token";
  return `${who}: ${perFile}${kept}. ${formatBytes(limits.remainingTodayBytes)} of ${
    formatBytes(limits.dailyCapBytes)
  } left today.`;
}
