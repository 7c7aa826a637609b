CREATE FUNCTION chronicle_owner_login() RETURNS boolean
LANGUAGE sql STABLE AS $$ SELECT pg_has_role(session_user, 'chronicle_owner', 'MEMBER') $$;
COMMENT ON FUNCTION chronicle_owner_login() IS
    'Is the login behind this statement (not the definer it runs as) the owner''s?';
