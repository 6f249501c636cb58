-- 200_quality_order: two more terms of the multifactor order (docs/scheduling.md "Order").
--
-- weight_xfactor: weight of the expansion factor, (wait + planned runtime) /
-- max(planned runtime, 10 s), the bounded slowdown a job would have if it
-- started now; it favours short jobs and grows with the wait. The default
-- 100 makes X = 100 weigh as much as a whole fair-share factor (10000 x 1).
-- starve_after: a job that has waited this many seconds orders before every
-- job of its class that has not, oldest first, whatever its other factors
-- (a bound on starvation); default 172800 (two days). Its reservation is then also
-- protected: jobs behind it backfill by time limits, not predictions. 0 is off.
INSERT INTO settings (key, value) VALUES ('weight_xfactor', '100') ON CONFLICT (key) DO NOTHING;
INSERT INTO settings (key, value) VALUES ('starve_after', '172800') ON CONFLICT (key) DO NOTHING;
