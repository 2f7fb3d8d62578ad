ALTER TABLE series RENAME COLUMN precision_name TO precision;
