CREATE OR REPLACE FUNCTION chronicle_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'CR002',
              HINT = 'record a new event that corrects or supersedes the old one';
END
$$;
