CREATE FUNCTION chronicle_promotion_ends_logins() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {search_path} AS $$
BEGIN
    UPDATE browser_logins SET ended_at = now() WHERE user_id = NEW.id AND ended_at IS NULL;
    UPDATE login_codes SET used_at = now() WHERE user_id = NEW.id AND used_at IS NULL;
    RETURN NULL;
END
$$;
CREATE TRIGGER users_promotion_ends_logins AFTER UPDATE OF is_admin ON users
    FOR EACH ROW WHEN (NEW.is_admin AND NOT OLD.is_admin)
    EXECUTE FUNCTION chronicle_promotion_ends_logins();
