/**
 * The hand-off to a PDP storage provider (src/handoff/, docs/handoff.md).
 * `handoff_pieces`: where each piece stands there (one row per stored piece
 * once an active deal keeps it, whatever the provider says). `handoff_calls`:
 * every call made to the provider with the body it was sent with, open until
 * settled: a restart re-sends or re-polls exactly that. `handoff_data_sets`:
 * the service's data set at each provider. Times are Unix milliseconds.
 */
export const sql = `
CREATE TABLE handoff_pieces (
  cid TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  state TEXT NOT NULL,
  size INTEGER NOT NULL,
  data_set_id INTEGER,
  piece_id INTEGER,
  tx_hash TEXT,
  error TEXT,
  call_id TEXT,
  queued_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX handoff_pieces_by_state ON handoff_pieces (state, updated_ms);
CREATE INDEX handoff_pieces_by_call ON handoff_pieces (call_id) WHERE call_id IS NOT NULL;
CREATE TABLE handoff_calls (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  status_url TEXT,
  tx_hash TEXT,
  refusals INTEGER NOT NULL DEFAULT 0,
  reconcile_until_ms INTEGER,
  opened_ms INTEGER NOT NULL,
  closed_ms INTEGER
);
CREATE INDEX handoff_calls_open ON handoff_calls (kind, opened_ms) WHERE closed_ms IS NULL;
CREATE TABLE handoff_data_sets (
  provider TEXT PRIMARY KEY,
  client_data_set_id TEXT NOT NULL,
  data_set_id INTEGER,
  call_id TEXT
);
`;
