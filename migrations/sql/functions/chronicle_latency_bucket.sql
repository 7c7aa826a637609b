-- The band of the usage rollups' latency histogram a latency falls in: bands 1% wide
-- (band k holds 1.01^k <= ms < 1.01^(k+1)), every latency of 0 or less in the lowest. The
-- bands are in the order of the latencies they hold, which is all the percentiles need.
CREATE FUNCTION chronicle_latency_bucket(ms float8) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN ms <= 0 THEN -2147483648 ELSE floor(ln(ms) / ln(1.01::float8))::integer END
$$;
