'use strict'
// The two records of scenario S1 (the vendor's C producer benchmark), built from literals as the
// C benchmark's loop builds its arguments; shared by the lab's Node harness (bench.js) and its cost programs.

/** One S1 ten-field record, built from literals as the C benchmark's loop builds its
 * arguments, with the iteration number formatted as text. */
function recordA(index) {
  return {
    content_key_1: '1abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_2: '2abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_3: '3abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_4: '4abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_5: '5abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_6: '6abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_7: '7abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_8: '8abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_9: '9abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    index: String(index),
  }
}

/** The S1 four-field record, built in the loop too. */
function recordB() {
  return {
    LogHub: 'Real-time log collection and consumption',
    'Search/Analytics': 'Query and real-time analysis',
    Visualized: 'dashboard and report functions',
    Interconnection: 'Grafana and JDBC/SQL92',
  }
}

module.exports = { recordA, recordB }
