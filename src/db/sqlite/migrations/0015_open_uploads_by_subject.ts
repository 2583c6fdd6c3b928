/**
 * A client's unfinished resumable uploads, counted at each creation: at most
 * --sponsored-tus-max-open (an address) or --tus-max-open (a user) may be
 * open at once (uploads/resumable.ts). Only unfinished ones are indexed.
 */
export const sql = `
CREATE INDEX resumable_uploads_open_by_subject ON resumable_uploads (usage_subject)
  WHERE deal_id IS NULL;
`;
