-- Tokens remember the token that minted them, so revoking a token revokes
-- its descendants (and a non-admin's mint is bounded by its parent).
ALTER TABLE api_tokens ADD COLUMN parent_id bigint REFERENCES api_tokens(id) ON DELETE SET NULL;
CREATE INDEX api_tokens_parent_idx ON api_tokens (parent_id) WHERE parent_id IS NOT NULL;
