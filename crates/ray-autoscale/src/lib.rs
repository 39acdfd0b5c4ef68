//! Replica math for Ray worker groups (desired pods, `workersToDelete`, surplus deletion) and the
//! Ray autoscaler's demand-to-replicas planner. Pure: the clock is an input.
