-- 200_quality_order: two more terms of the multifactor order (docs/scheduling.md "Order").
--
-- weight_xfactor: weight of the expansion factor, (wait + planned runtime) /
-- max(planned runtime, 10 s), the bounded slowdown a job would have if it
-- started now; it favours short jobs and grows with the wait. 0 (the
-- default) leaves the order as it was.
-- starve_after: a job that has waited this many seconds orders before every
-- job of its class that has not, oldest first, whatever its other factors
-- (a bound on starvation). 0 (the default) is off.
INSERT INTO settings (key, value) VALUES ('weight_xfactor', '0') ON CONFLICT (key) DO NOTHING;
INSERT INTO settings (key, value) VALUES ('starve_after', '0') ON CONFLICT (key) DO NOTHING;
