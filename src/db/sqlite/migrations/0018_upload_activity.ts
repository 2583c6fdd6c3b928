/**
 * A resumable upload's last activity, in its record: before, it was kept in
 * one instance's memory, so an idle sponsored upload was never let go after a
 * restart, and a PATCH on another instance did not tell the one that created
 * it. `last_activity_ms` is when it last got bytes (or was created);
 * `reservation_released` says its cap reservation went for idling, so any
 * instance takes it again on the next byte. Existing rows start 24 h before
 * their expiry: their creation (rows older than the rule of 24 h from creation:
 * their last bytes), so an upload idle for 10 minutes since then is let go by
 * the first sweep, and its next byte takes its reservation again.
 */
export const sql = `
ALTER TABLE resumable_uploads ADD COLUMN last_activity_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resumable_uploads ADD COLUMN reservation_released INTEGER NOT NULL DEFAULT 0;
UPDATE resumable_uploads SET last_activity_ms = expires_ms - 86400000;
CREATE INDEX resumable_uploads_idle ON resumable_uploads (last_activity_ms, id)
  WHERE deal_id IS NULL AND reservation_released = 0 AND tier = 'sponsored';
`;
