"""The stream maintainers: the follower, the Lambda handler's rules, and the streams client."""
