//! What an API server's error answer means for a controller: the object is gone, it already exists,
//! or the write collided with the stored object. Shared by every controller, so each call site
//! reads as the decision it makes (`Err(e) if is_not_found(&e) => ...`) instead of a status code.

/// The API server's `Status` inside an error answer (`None` for transport, decode and other
/// client-side errors).
fn api_status(error: &kube::Error) -> Option<&kube::core::Status> {
    match error {
        kube::Error::Api(status) => Some(status),
        _ => None,
    }
}

/// HTTP 404 (reason `NotFound`): the object, or its namespace, does not exist.
pub fn is_not_found(error: &kube::Error) -> bool {
    api_status(error).is_some_and(|s| s.code == 404 || s.is_not_found())
}

/// Reason `AlreadyExists`: a create found an object of that name. Narrower than [`is_conflict`]: a
/// create refused with another 409 (an injected or storage-level `Conflict`) is not this.
pub fn is_already_exists(error: &kube::Error) -> bool {
    api_status(error).is_some_and(|s| s.is_already_exists())
}

/// HTTP 409, whatever the reason: on a create the name is taken (`AlreadyExists`), on an update or
/// status write the object changed since it was read (`Conflict`).
pub fn is_conflict(error: &kube::Error) -> bool {
    api_status(error).is_some_and(|s| s.code == 409)
}

/// `result` with a 404 answer turned into `Ok(None)`: for deletes and reads of objects that may
/// already be gone.
pub fn ok_if_not_found<T>(result: Result<T, kube::Error>) -> Result<Option<T>, kube::Error> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_error(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status::failure("m", reason).with_code(code)))
    }

    #[test]
    fn not_found_is_a_404_or_the_not_found_reason() {
        assert!(is_not_found(&api_error(404, "NotFound")));
        assert!(is_not_found(&api_error(404, "")));
        assert!(!is_not_found(&api_error(409, "AlreadyExists")));
        assert!(!is_not_found(&kube::Error::LinesCodecMaxLineLengthExceeded));
    }

    #[test]
    fn already_exists_is_narrower_than_conflict() {
        let exists = api_error(409, "AlreadyExists");
        let conflict = api_error(409, "Conflict");
        assert!(is_already_exists(&exists) && is_conflict(&exists));
        assert!(!is_already_exists(&conflict) && is_conflict(&conflict));
        assert!(!is_conflict(&api_error(404, "NotFound")));
    }

    #[test]
    fn ok_if_not_found_keeps_other_errors() {
        assert_eq!(ok_if_not_found(Ok::<_, kube::Error>(1)).unwrap(), Some(1));
        assert_eq!(ok_if_not_found::<i32>(Err(api_error(404, "NotFound"))).unwrap(), None);
        assert!(ok_if_not_found::<i32>(Err(api_error(500, "InternalError"))).is_err());
    }
}
