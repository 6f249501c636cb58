-- Fair-share decay as one SQL function: usage * 2^(-elapsed_s / half_life_s),
-- no decay when half_life_s <= 0 or elapsed_s <= 0. The very formula of the
-- core's fairtree_decay() (service/sched/fairtree.c), which the simulator
-- calls; every SQL site (the leader's usage fold and snapshot, the fair-share
-- report) calls this one. unit.store_db checks the two agree.
-- Where C's exp2 or * give 0 (below 2^-1074) PostgreSQL raises "underflow",
-- which would fail the leader's cycle: those results are 0 here, as in C.
CREATE FUNCTION muster_decay(value double precision, elapsed_s double precision,
                             half_life_s double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
AS $$
    SELECT CASE WHEN NOT (half_life_s > 0 AND elapsed_s > 0) THEN value
                WHEN value = 0 OR elapsed_s / half_life_s >= 1075 THEN 0
                WHEN ln(abs(value)) / ln(2::double precision) - elapsed_s / half_life_s < -1073 THEN 0
                ELSE value * power(2::double precision, -elapsed_s / half_life_s)
           END
$$;
