"""Building a service instance: settings from the environment, the instance's configuration on
disk, the store and domain wiring, and the demo instance."""
