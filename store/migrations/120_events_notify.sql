-- muster-api's event stream (GET /v1/events, docs/api.md "Event stream")
-- is pushed, not polled: every statement that adds events (INSERT or COPY)
-- wakes the API's one events reader with a NOTIFY on muster_events. It is
-- delivered at COMMIT, and the copies of one transaction collapse into one.
CREATE FUNCTION muster_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('muster_events', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION muster_events_notify();
