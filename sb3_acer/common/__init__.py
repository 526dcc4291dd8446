"""What ACER's pieces share: the pure maths, the action distributions, the update and the policies."""
