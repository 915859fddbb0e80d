-- D-8: performer-reported progress in [0, 1], NULL until reported
ALTER TABLE job ADD COLUMN progress REAL;
