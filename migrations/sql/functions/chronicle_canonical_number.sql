CREATE FUNCTION chronicle_canonical_number(p_number text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    v_number numeric;
    v_float  double precision;
    v_text   text;
    v_digits text;
    v_shift  integer;
    v_exact  numeric;
BEGIN
    IF strpos(p_number, '.') = 0 THEN
        IF length(p_number) < 19 THEN
            RETURN p_number;
        END IF;
        v_number := p_number::numeric;
        IF v_number BETWEEN -9223372036854775808 AND 18446744073709551615 THEN
            RETURN p_number;
        END IF;
        IF abs(v_number) > 2::numeric ^ 1024 - 2::numeric ^ 971 THEN
            RETURN NULL;
        END IF;
        v_float := v_number::double precision;
        v_shift := floor(log(2, abs(v_number)))::integer - 53;
        v_exact := (v_float / 2::double precision ^ v_shift)::bigint * 2::numeric ^ v_shift;
        RETURN CASE WHEN v_exact = v_number THEN p_number END;
    END IF;
    v_number := abs(p_number::numeric);
    IF v_number >= 9007199254740992 OR v_number < 2.5e-324 THEN
        RETURN NULL;
    END IF;
    v_float := p_number::double precision;
    IF v_float = trunc(v_float) THEN
        RETURN NULL;
    END IF;
    v_text := v_float::text;
    IF v_text LIKE '%e+15' THEN
        v_digits := replace(split_part(ltrim(v_text, '-'), 'e', 1), '.', '');
        v_text := CASE WHEN v_float < 0 THEN '-' ELSE '' END
                  || left(v_digits, 16) || '.' || substr(v_digits, 17);
    END IF;
    RETURN v_text;
END
$$;
