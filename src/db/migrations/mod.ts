/**
 * The numbered migrations, oldest first. A migration is never edited once it
 * has shipped; a change to the schema is a new file with the next number.
 */
import { sql as initial } from "./0001_initial.ts";
import { sql as tokens } from "./0002_tokens.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "initial", sql: initial },
  { version: 2, name: "tokens", sql: tokens },
];
