-- percentile_cont(p) of the latencies a group's histogram holds (see daily_usage): the value
-- at rank p * (n - 1), interpolated between its two neighbouring ranks as percentile_cont
-- does. A rank's value is its band's lowest latency for the band's first call, its highest
-- for the last, and in between interpolated between the two: exact wherever a band holds at
-- most two calls, and otherwise within the band (1%). ``bands``: the group's bands in order,
-- each (calls, min_ms, max_ms).
CREATE FUNCTION chronicle_latency_percentile(p float8, bands float8[])
RETURNS float8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n float8 := 0;
    rank float8;
    low float8;
    high float8;
    lo_value float8;
    hi_value float8;
    before float8 := 0;
    calls float8;
    i integer;
BEGIN
    FOR i IN 1 .. coalesce(array_length(bands, 1), 0) LOOP
        n := n + bands[i][1];
    END LOOP;
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    rank := p * (n - 1);
    low := floor(rank);
    high := ceil(rank);
    FOR i IN 1 .. array_length(bands, 1) LOOP
        calls := bands[i][1];
        IF lo_value IS NULL AND low < before + calls THEN
            lo_value := CASE WHEN low = before THEN bands[i][2]
                             WHEN low = before + calls - 1 THEN bands[i][3]
                             ELSE bands[i][2] + (bands[i][3] - bands[i][2])
                                  * (low - before) / (calls - 1) END;
        END IF;
        IF high < before + calls THEN
            hi_value := CASE WHEN high = before THEN bands[i][2]
                             WHEN high = before + calls - 1 THEN bands[i][3]
                             ELSE bands[i][2] + (bands[i][3] - bands[i][2])
                                  * (high - before) / (calls - 1) END;
            EXIT;
        END IF;
        before := before + calls;
    END LOOP;
    IF low = high THEN
        RETURN lo_value;
    END IF;
    RETURN lo_value + (rank - low) * (hi_value - lo_value);
END
$$;
