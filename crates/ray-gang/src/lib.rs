//! Gang-scheduling objects for Ray clusters: Volcano and scheduler-plugins PodGroups, YuniKorn task
//! groups and KAI queues. Pure.
