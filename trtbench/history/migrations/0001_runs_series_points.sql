CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL,
    source TEXT NOT NULL, versions TEXT NOT NULL, machine TEXT NOT NULL, accepted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE series (series_id TEXT PRIMARY KEY, model TEXT NOT NULL, model_hash TEXT NOT NULL, variant TEXT NOT NULL,
    options TEXT NOT NULL, precision_name TEXT NOT NULL, point TEXT NOT NULL, threads INTEGER NOT NULL,
    knobs TEXT NOT NULL, device TEXT NOT NULL, machine TEXT NOT NULL, figure TEXT NOT NULL);
CREATE TABLE points (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    series_id TEXT NOT NULL REFERENCES series (series_id), status TEXT NOT NULL, value DOUBLE PRECISION,
    low DOUBLE PRECISION, high DOUBLE PRECISION, reason TEXT NOT NULL, PRIMARY KEY (run_id, series_id));
CREATE INDEX points_series ON points (series_id);
