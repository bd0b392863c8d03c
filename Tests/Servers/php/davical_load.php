<?php
// Creates a DAViCal user with DAViCal's default home collections, and loads items into them,
// through DAViCal's own code (what its admin UI, PUT handler and scripts/load_calendar.php do),
// in one PHP process instead of an HTTP request per item. Started by dav_servers.py:
//
//   FERRY_DAVICAL_CONFIG=/tmp/.../davical-conf.php php davical_load.php < spec.json
//
// spec.json: {"username": "ferry", "password": "secret", "fullname": "...", "email": "...",
//             "items": {"/ferry/addresses/card-0.vcf": "BEGIN:VCARD...", ...}}
// Paths are DAViCal paths (after /caldav.php). Cards are stored the way a PUT stores them
// (DAViCal adds a REV when there is none), events through simple_write_resource.

$spec = json_decode(file_get_contents('php://stdin'), true);
$config = getenv('FERRY_DAVICAL_CONFIG');
$_SERVER['SERVER_NAME'] = '../..' . substr($config, 0, -strlen('-conf.php'));
$_SERVER['SERVER_PORT'] = 80;
$_SERVER['SCRIPT_NAME'] = '/caldav.php';
$_SERVER['DOCUMENT_ROOT'] = '/usr/share/davical/htdocs';
$_SERVER['REQUEST_METHOD'] = 'PUT';
chdir('/usr/share/davical/htdocs');
require_once('./always.php');
require_once('auth-functions.php');
require_once('DAVResource.php');
require_once('caldav-PUT-functions.php');
require_once('vcard.php');

$username = $spec['username'];
$principal = new Principal('username', $username);
if (!$principal->Exists()) {
    $principal->Create(array(
        'username' => $username,
        'password' => '**' . $spec['password'],
        'fullname' => $spec['fullname'],
        'displayname' => $spec['fullname'],
        'email' => $spec['email'],
    ));
    $principal = new Principal('username', $username, false);
    CreateHomeCollections($username);
    CreateDefaultRelationships($username);
}

class LoaderSession {
    var $user_no, $principal_id, $username, $dav_name, $logged_in = true;
    function __construct($principal) {
        $this->user_no = $principal->user_no();
        $this->principal_id = $principal->principal_id();
        $this->username = $principal->username();
        $this->dav_name = $principal->dav_name();
    }
    function AllowedTo($whatever) { return true; }
}
$session = new LoaderSession($principal);

$qry = new AwlQuery();
$collections = array();
$started = microtime(true);
foreach ($spec['items'] as $path => $data) {
    $container = preg_replace('{[^/]*$}', '', $path);
    if (!isset($collections[$container])) {
        $collections[$container] = new DAVResource($container);
        if (!$collections[$container]->Exists()) {
            fwrite(STDERR, "no collection $container\n");
            exit(1);
        }
    }
    $collection = $collections[$container];
    if (preg_match('{^BEGIN:VCARD}i', $data)) {
        // caldav-PUT-vcard.php, for a new resource.
        $vcard = new vCard($data);
        $last_modified = $vcard->GetPValue('REV');
        if (empty($last_modified)) {
            $last_modified = gmdate('Ymd\THis\Z');
            $vcard->AddProperty('REV', $last_modified);
        }
        $rendered = $vcard->Render();
        $qry->Begin();
        $qry->QDo('INSERT INTO caldav_data (user_no, dav_name, dav_etag, caldav_data, caldav_type, logged_user, created, modified, collection_id)
                   VALUES (:user_no, :dav_name, :etag, :dav_data, \'VCARD\', :session_user, current_timestamp, :modified, :collection_id)',
            array(':user_no' => $collection->user_no(), ':dav_name' => $path, ':etag' => md5($rendered), ':dav_data' => $rendered,
                  ':session_user' => $session->user_no, ':modified' => $last_modified,
                  ':collection_id' => $collection->GetProperty('collection_id')));
        $qry->QDo("SELECT currval('dav_id_seq') AS dav_id");
        $row = $qry->Fetch();
        $vcard->Write($row->dav_id, false);
        $qry->QDo('SELECT write_sync_change(:collection_id, 201, :dav_name)',
            array(':collection_id' => $collection->GetProperty('collection_id'), ':dav_name' => $path));
        if (!$qry->Commit()) {
            fwrite(STDERR, "could not store $path\n");
            exit(1);
        }
    } else {
        if (!simple_write_resource($path, $data, 'INSERT')) {
            fwrite(STDERR, "could not store $path\n");
            exit(1);
        }
    }
}
foreach ($collections as $container => $collection) {
    getCacheInstance()->delete('collection-' . $container, null);
}
printf("%d items in %.2fs\n", count($spec['items']), microtime(true) - $started);
