CREATE FUNCTION chronicle_promotion_revokes_tokens() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    UPDATE api_tokens SET revoked_at = now()
    WHERE user_id = NEW.id AND revoked_at IS NULL AND NOT by_owner;
    RETURN NULL;
END
$$;
CREATE TRIGGER users_promotion_revokes_tokens AFTER UPDATE OF is_admin ON users
    FOR EACH ROW WHEN (NEW.is_admin AND NOT OLD.is_admin)
    EXECUTE FUNCTION chronicle_promotion_revokes_tokens();
